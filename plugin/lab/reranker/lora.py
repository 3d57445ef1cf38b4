"""``factsieve train-reranker lora``: train the LoRA cross-encoder (``plugin.learn.train.lora``,
the trainer the tenant reranker update also runs) on mined groups and write it as a small committed
artifact; which queries are held out or folded; whether int8 ranks like fp32.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from plugin.errors import BadInput
from plugin.learn.train.groups import TrainingGroup, sha1_digit
from plugin.learn.train.lora import LoraRerankerOptions, PairScorer, encode_pairs, group_map5, train

log = logging.getLogger(__name__)


def holdout_group(query_id: str) -> bool:
    """``--holdout``: the same sha1-chosen slice the query tower holds out (digits 5 and 6)."""
    return sha1_digit(query_id) in "56"


def split_groups(groups: Sequence[TrainingGroup], *, holdout: bool = False,
                 fold: tuple[int, int] | None = None) -> tuple[list[TrainingGroup], list[TrainingGroup]]:
    """The groups trained on and the groups held out (scored each epoch): ``--holdout``'s slice,
    or fold ``i`` of ``k`` (``query_tower.fold_of``, so a reranker's fold is the query tower's
    fold of the same ``i/k``); every group of a query goes the same way (pure)."""
    if fold is not None and holdout:
        raise BadInput("--holdout and --fold each choose what is held out: give one")
    if fold is None:
        held = holdout_group if holdout else (lambda _qid: False)
    else:
        from plugin.lab.query_tower import check_fold, fold_of

        i, k = check_fold(fold)
        held = lambda qid: fold_of(qid, k) == i  # noqa: E731
    return [g for g in groups if not held(g.query_id)], [g for g in groups if held(g.query_id)]


def train_lora_reranker(settings: Any, source: Any, name: str, out: Any = None,
                        options: LoraRerankerOptions | None = None, *,
                        holdout: bool = False, fold: tuple[int, int] | None = None,
                        warm: str | None = None) -> dict[str, Any]:
    """Train on ``source``'s groups (``GroupSource``: mined now or read from ``mine``'s file) and
    write ``<out>/<name>.npz`` + ``.json`` (default ``build/artefacts/rerankers/``; never into the
    package: ``plugin.artefacts.outside_package``).
    With ``holdout`` the sha1-chosen slice of the training queries is kept out and its groups
    scored each epoch (MAP@5 of the positive among its group's hard negatives); nothing is
    written then: it is how the options were chosen. ``fold=(i, k)`` trains outside fold ``i`` of
    ``k`` (``query_tower.fold_of``, sha1 of the query id), scores fold ``i`` each epoch, and writes
    the adapter: its manifest lists what it saw, so scores on fold ``i`` are out-of-fold (for
    choosing how its scores blend with the first stage's ranks). ``warm``: a committed reranker
    adapter to start from (``warm_start``): its deltas below the top ``options.layers`` are
    merged into the frozen encoder and written with the result, its top deltas and head are
    where training starts."""
    from datetime import datetime, timezone
    from pathlib import Path

    from plugin.embedding.adapter import save_adapter
    from plugin.embedding.onnx_backend import open_tokenizer
    from plugin.build.adapted import read_base_weights
    from plugin.embedding.query_tower import base_model_dir
    from plugin.learn.train.tower import load_jax
    from plugin.artefacts import RERANKERS, outside_package, written_dir

    folder = outside_package(Path(out) if out is not None else written_dir(RERANKERS), "--out")
    options = (options or LoraRerankerOptions()).validated()
    jax = load_jax()
    t_start = time.perf_counter()
    groups, meta = source.load(settings)
    fit_groups, held_groups = split_groups(groups, holdout=holdout, fold=fold)
    if not fit_groups:
        raise BadInput("no training groups left to fit on")

    base = base_model_dir(settings)
    shape, weights = read_base_weights(base)
    tok, _pad, _len = open_tokenizer(base, options.max_length)
    start, kept, warm_info = warm_start(warm, shape.layers, options) if warm else (None, {}, None)
    if start is not None:  # the frozen layers carry the start's deltas; the trained ones start bare
        top = top_prefixes(shape.layers, options)
        weights = {**start.merged(weights), **{k: v for k, v in weights.items() if k.startswith(top)}}
    scorer = PairScorer(jax, shape, weights, options, start=start)

    def cache(gs: Sequence[TrainingGroup]) -> list[list[np.ndarray]]:
        return scorer.cache_groups(encode_pairs(tok, gs, options.negatives))

    t0 = time.perf_counter()
    fit_cache, held_cache = cache(fit_groups), cache(held_groups)
    cache_s = time.perf_counter() - t0
    history: list[dict[str, Any]] = []

    def on_epoch(epoch: int, loss: float, info: dict[str, Any]) -> None:
        row: dict[str, Any] = {"epoch": epoch, "loss": round(loss, 4), "seconds": info["seconds"]}
        if held_cache:
            row["holdout_group_MAP@5"] = group_map5([scorer.score(info["params"], g) for g in held_cache])
        history.append(row)
        log.info("epoch %d: %s", epoch, row)

    t0 = time.perf_counter()
    params = train(jax, scorer, fit_cache, options, on_epoch)
    train_s = time.perf_counter() - t0
    seconds = {"cache": round(cache_s, 1), "train": round(train_s, 1),
               "total": round(time.perf_counter() - t_start, 1)}
    result: dict[str, Any] = {"name": name, "dataset": meta.get("dataset_name"),
                              "training_groups": len(fit_groups), "holdout_groups": len(held_groups),
                              "options": asdict(options), "history": history, "seconds": seconds}
    if holdout:
        return result
    deltas = {**kept, **{k: (np.asarray(a), np.asarray(b)) for k, (a, b) in params["lora"].items()}}
    head = {k: np.asarray(v) for k, v in params["head"].items()}
    manifest = {
        **adapter_manifest(settings, meta, {g.query_id for g in fit_groups}, options.max_length, fold),
        "layers": sorted({int(k.split(".")[2]) for k in deltas}),
        **({"warm_start": warm_info} if warm_info else {}),
        "options": asdict(options), "history": history, "seconds": seconds,
        "trained_on": "CPU (JAX)", "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    path = save_adapter(folder, name, deltas, options.scale, manifest, whole=head)
    # int8 is served only when it ranks like fp32 on groups the reranker did not train on where
    # there are such (else its training groups): the same passage first in >= INT8_MIN_TOP1 of them
    t0 = time.perf_counter()
    check = int8_agreement(settings, name, folder, held_groups or fit_groups[:CHECK_GROUPS])
    check["seconds"] = round(time.perf_counter() - t0, 1)
    manifest.update(int8=check["top1_agreement"] >= INT8_MIN_TOP1, int8_check=check)
    path = save_adapter(folder, name, deltas, options.scale, manifest, whole=head)
    result.update(path=str(path), bytes=path.stat().st_size, int8_check=check, int8=manifest["int8"])
    return result


def top_prefixes(depth: int, options: LoraRerankerOptions) -> tuple[str, ...]:
    """The weight-name prefixes of the top ``options.layers`` of a ``depth``-layer encoder."""
    return tuple(f"encoder.layer.{i}." for i in range(depth - options.layers, depth))


def warm_start(name: str, depth: int, options: LoraRerankerOptions
               ) -> tuple[Any, dict[str, tuple[np.ndarray, np.ndarray]], dict[str, Any]]:
    """The committed reranker adapter ``name`` to start from, its deltas below the trained top
    layers (kept as they are and written with the result), and what the manifest says of it.
    Refuses an adapter of another rank, or one without deltas on the trained layers."""
    from plugin.embedding.query_tower import adapter_digest
    from plugin.search.lora_reranker import find_reranker_adapter, reranker_adapter_dir

    adapter = find_reranker_adapter(name)
    if adapter.rank != options.rank:
        raise BadInput(f"--warm {name!r} has rank {adapter.rank}; train with --rank {adapter.rank}")
    top = top_prefixes(depth, options)
    kept = {k: (np.asarray(a), np.asarray(b)) for k, (a, b) in adapter.deltas.items() if not k.startswith(top)}
    return adapter, kept, {"name": name, "sha256": adapter_digest(name, reranker_adapter_dir()),
                           "frozen_deltas": len(kept)}


def adapter_manifest(settings: Any, meta: dict[str, Any], train_ids: set[str], max_length: int,
                     fold: tuple[int, int] | None = None) -> dict[str, Any]:
    """What a reranker adapter's manifest says of its base, its pairs and what it trained on
    (``meta``: the groups' source's; several datasets' groups: each in ``sources``, with the
    training queries of it that were trained on); the trainer adds its layers, options and
    history."""
    sources = [{**src, "training_query_ids": sorted(set(map(str, src.get("training_query_ids") or ())) & train_ids,
                                                    key=lambda s: (len(s), s))}
               for src in meta.get("sources") or ()]
    languages = sorted(set().union(*(training_languages(src.get("dataset"), set(src["training_query_ids"]))
                                     for src in sources))) if sources \
        else training_languages(meta.get("dataset"), train_ids)
    return {
        "base_model": settings.embedding_model, "kind": "cross-encoder-lora", "pooling": "mean",
        "max_length": max_length, "dataset_name": meta.get("dataset_name"),
        "training_rule": (meta.get("split_rule") or "") + (
            f", outside fold {fold[0]} of {fold[1]} (sha1 of the id)" if fold else ""),
        "first_stage": meta.get("first_stage"),
        "training_query_ids": sorted(train_ids, key=lambda s: (len(s), s)),
        **({"sources": [{k: src.get(k) for k in ("dataset_name", "split_rule", "training_query_ids")}
                        for src in sources]} if sources else {}),
        # ``Matcher`` reranks only posts and fact-checks in these (``outside_languages``)
        **({"languages": languages} if languages else {})}


def training_languages(dataset: Any, query_ids: set[str]) -> list[str]:
    """The languages of the training posts and of their relevant fact-checks, from the dataset
    the groups were mined from ([] when it is not on disk: then the reranker is not restricted)."""
    import json
    from pathlib import Path

    folder = Path(dataset) if dataset else None
    if folder is None or not (folder / "queries.jsonl").is_file():
        return []
    from plugin.learn.train.datasets import load_dataset

    data = load_dataset(folder)
    langs = {q.get("lang") for q in data.queries if str(q["id"]) in query_ids}
    wanted = {f for q in query_ids for f in data.qrels["all"].get(q, ())}
    with (folder / "factchecks.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                fc = json.loads(line)
                if str(fc.get("id")) in wanted:
                    langs.add(fc.get("lang"))
    return sorted(lang for lang in langs if lang)


#: int8 is served when it puts the same passage first as fp32 in at least this share of groups
INT8_MIN_TOP1 = 0.98


#: groups the int8 check scores when nothing was held out
CHECK_GROUPS = 100


def int8_agreement(settings: Any, name: str, folder: Any, groups: Sequence[TrainingGroup]) -> dict[str, Any]:
    """Build adapter ``name`` (from ``folder``) into fp32 and int8 graphs in a scratch folder and
    compare them on ``groups``: top-1 agreement, mean Spearman correlation and the time each takes
    per pair (the live budget is spent on pairs)."""
    import tempfile
    from pathlib import Path

    from plugin.embedding.adapter import load_adapter
    from plugin.build.adapted import build_adapted, reranker_graph
    from plugin.lab.reranker.export import spearman
    from plugin.search.rerank import RERANKER_MANIFEST, OnnxCrossEncoder

    adapter = load_adapter(name, Path(folder))
    max_length = int(adapter.manifest.get("max_length", 128))
    with tempfile.TemporaryDirectory(prefix="factsieve-int8-check-") as tmp:
        built = build_adapted(settings, adapter, Path(tmp) / name,
                              graph=reranker_graph(adapter.manifest),
                              manifest_file=RERANKER_MANIFEST, manifest={}, version=0)
        models = {kind: OnnxCrossEncoder(built, model_file=built / "onnx" / f"{file}.onnx",
                                         max_seq_length=max_length, activation="none")
                  for kind, file in (("fp32", "model"), ("int8", "model_int8"))}
        top1, rho, secs, pairs = [], [], {"fp32": 0.0, "int8": 0.0}, 0
        for g in groups:
            passages = [g.positive, *g.negatives[:15]]
            scores = {}
            for kind, model in models.items():
                t0 = time.perf_counter()
                scores[kind] = model.logits(g.query, passages)
                secs[kind] += time.perf_counter() - t0
            pairs += len(passages)
            top1.append(int(np.argmax(scores["fp32"])) == int(np.argmax(scores["int8"])))
            rho.append(spearman(scores["fp32"], scores["int8"]))
    return {"groups": len(groups), "top1_agreement": round(float(np.mean(top1)), 4) if top1 else 0.0,
            "mean_spearman": round(float(np.mean(rho)), 4) if rho else 0.0,
            "ms_per_pair": {k: round(1e3 * v / max(pairs, 1), 2) for k, v in secs.items()}}
