"""Fine-tune the query tower of the embedding model for claim matching (``factsieve
train-query-encoder``): a LoRA adapter over the top layers, trained on CPU with JAX.

**What is trained.** The query side only (``plugin.embedding.adapter`` says why): the fact-checks'
vectors are the base encoder's, exactly as ingestion computes them (``embed_factchecks``), and
stay fixed. Each training post is embedded by the adapted tower and scored against *every*
fact-check of the dataset; the loss is the softmax cross-entropy of its relevant fact-checks
(``-log sum_{d relevant} softmax(q·d / tau)``), so every other fact-check is a negative and the
hardest ones weigh most: the first stage's hard negatives come for free, without mining.

**Split.** Only training queries are read (``split == "train"``; CLEF-2020 Task 2: 546 of 816),
as for the reranker (``plugin.learn.train.groups.training_query_ids``); the manifest lists their
ids so ``evaluate`` leaves them out. ``--holdout`` keeps a sha1-chosen slice of them aside and
reports its dense MAP@5 before and after each epoch: how the options were chosen.

**Cost.** The layers below the adapted ones are frozen, so their output is computed once per
query (the cache); an epoch then runs the top layers forward and backward only. CLEF-2020 on two
cores: ~20 s to embed-and-cache, ~20 s an epoch, ~2 min to embed the 10,375 fact-checks.

Needs JAX on CPU (``pip install 'factsieve[tune]'``), imported when a function runs; the adapter it
writes is merged into an ONNX graph by ``factsieve model build`` without it.
"""
from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from plugin.errors import BadInput
from plugin.learn.train.tower import Tower, TowerOptions, load_jax

log = logging.getLogger(__name__)


def fold_of(query_id: str, folds: int) -> int:
    """A query's fold for ``--fold I/K`` (sha1 of its id, so the same on every machine)."""
    return int(hashlib.sha1(str(query_id).encode("utf-8")).hexdigest(), 16) % folds


def check_fold(fold: tuple[int, int]) -> tuple[int, int]:
    """``--fold I/K`` as given, or BadInput naming the valid range."""
    i, k = fold
    if not 2 <= k <= 20 or not 0 <= i < k:
        raise BadInput("--fold I/K needs 2 <= K <= 20 and 0 <= I < K")
    return i, k


def holdout_digit(query_id: str) -> bool:
    """The held-out slice for ``--holdout``: sha1(id) starting with 5 or 6 (about 2 in 11 of
    CLEF-2020's training queries; digits 0-4 are the datasets' private holdout, not on disk)."""
    return hashlib.sha1(str(query_id).encode("utf-8")).hexdigest()[0] in "56"


def dense_map5(vectors: np.ndarray, docs: np.ndarray, relevant: Sequence[set[int]]) -> dict[str, float]:
    """Exact-search MAP@5 and S@1 of query vectors over the fact-check vectors."""
    from plugin.lab.evaluate.metrics import average_precision_at_k, success_at_k

    top = np.argsort(-(vectors @ docs.T), axis=1)[:, :5]
    aps = [average_precision_at_k([str(d) for d in row], {str(r) for r in rel}, 5)
           for row, rel in zip(top, relevant)]
    s1 = [success_at_k([str(d) for d in row], {str(r) for r in rel}, 1) for row, rel in zip(top, relevant)]
    return {"MAP@5": round(float(np.mean(aps)), 4), "S@1": round(float(np.mean(s1)), 4)}


def train(jax: Any, tower: Tower, cached: Sequence[np.ndarray], relevant: Sequence[set[int]],
          docs: np.ndarray, options: TowerOptions,
          on_epoch: Callable[[int, float, dict[str, Any]], None] | None = None,
          steps: int | None = None) -> dict[str, Any]:
    """Adam with a 10-step warm-up and linear decay; returns the trained LoRA parameters.
    ``steps``: optimizer steps in all (default ``epochs`` passes over ``cached``); the last
    epoch stops where they run out."""
    jnp = jax.numpy
    d = jnp.asarray(docs)
    tau = options.tau

    def loss_fn(params: Any, x: Any, m: Any, positives: Any) -> Any:
        q = tower.pool(tower.layers_between(params, x, m, tower.first, tower.shape.layers), m)
        logp = jax.nn.log_softmax(q @ d.T / tau, axis=-1)
        return -jax.scipy.special.logsumexp(jnp.where(positives, logp, -1e9), axis=-1).mean()

    grad_fn = jax.jit(jax.value_and_grad(loss_fn))
    tree = jax.tree_util

    @jax.jit
    def adam(params: Any, grads: Any, m1: Any, m2: Any, t: Any, lr: Any) -> Any:
        b1, b2 = 0.9, 0.999
        m1 = tree.tree_map(lambda a, g: b1 * a + (1 - b1) * g, m1, grads)
        m2 = tree.tree_map(lambda a, g: b2 * a + (1 - b2) * g * g, m2, grads)
        params = tree.tree_map(lambda w, a, v: w - lr * (a / (1 - b1 ** t)) / (jnp.sqrt(v / (1 - b2 ** t)) + 1e-8),
                               params, m1, m2)
        return params, m1, m2

    params = tower.params
    m1 = tree.tree_map(jnp.zeros_like, params)
    m2 = tree.tree_map(jnp.zeros_like, params)
    rng = np.random.default_rng(options.seed)
    n, bs = len(cached), options.batch_size
    total_steps = steps or options.epochs * math.ceil(n / bs)
    step, epoch = 0, 0
    while step < total_steps:
        epoch += 1
        t0, total, seen = time.perf_counter(), 0.0, 0
        order = rng.permutation(n)
        for start in range(0, n, bs):
            if step >= total_steps:
                break
            idx = order[start:start + bs]
            x, m = tower.pad([cached[i] for i in idx])
            positives = np.zeros((len(idx), len(docs)), bool)
            for row, i in enumerate(idx):
                positives[row, sorted(relevant[i])] = True
            loss, grads = grad_fn(params, x, m, positives)
            step += 1
            lr = options.lr * min(1.0, step / 10) * max(0.0, 1 - step / (total_steps + 1))
            params, m1, m2 = adam(params, grads, m1, m2, step, lr)
            total += float(loss) * len(idx)
            seen += len(idx)
        if on_epoch is not None:
            on_epoch(epoch, total / max(seen, 1), {"seconds": round(time.perf_counter() - t0, 1), "params": params})
    return params


def train_query_encoder(settings: Any, dataset_dir: Path, name: str, out: Path | None = None,
                        options: TowerOptions | None = None, *, holdout: bool = False,
                        fold: tuple[int, int] | None = None) -> dict[str, Any]:
    """Train an adapter on ``dataset_dir``'s training queries and write it (``out``, default
    ``build/artefacts/encoders/``; never into the package: ``plugin.artefacts.outside_package``).
    With ``holdout`` the sha1-chosen slice is kept out of training and scored each epoch;
    nothing is written then (it is how options are chosen).
    ``fold=(i, k)`` trains on the training queries outside fold ``i`` of ``k`` and writes the
    adapter: its manifest lists what it saw, so ``evaluate --split train`` scores it on fold
    ``i`` alone (out-of-fold numbers, for choosing what sits on top of the tower: fusion weights,
    the confidence model)."""
    from plugin.embedding import load_embedder
    from plugin.artefacts import ENCODERS, outside_package, written_dir
    from plugin.embedding.adapter import save_adapter
    from plugin.embedding.onnx_backend import open_tokenizer
    from plugin.build.adapted import read_base_weights
    from plugin.embedding.query_tower import base_model_dir
    from plugin.ingest.formats import Format, read_records
    from plugin.ingest.pipeline import IngestReport, embed_factchecks, validate
    from plugin.learn.train.datasets import load_dataset
    from plugin.learn.train.groups import training_query_ids
    from plugin.search.normalize import normalize_post
    from plugin.search.variants import VARIANTS

    folder = outside_package(Path(out) if out is not None else written_dir(ENCODERS), "--out")
    options = (options or TowerOptions()).validated()
    jax = load_jax()
    t_start = time.perf_counter()
    dataset = load_dataset(dataset_dir)
    train_ids, rule = training_query_ids(dataset.queries)
    by_id = {str(q["id"]): q for q in dataset.queries}
    # the fact-checks as ingestion reads and validates them, so the vectors are the index's
    report = IngestReport()
    factchecks = [fc for _ref, fc in validate(read_records([dataset.path / "factchecks.jsonl"], Format.jsonl), report)]
    doc_pos = {str(fc.id): i for i, fc in enumerate(factchecks)}
    queries = [by_id[q] for q in train_ids if dataset.qrels["all"].get(q)]
    if not queries:
        raise BadInput(f"{dataset.name}: no training query has a relevant fact-check ({rule})")
    n_all = len([q for q in queries if not (holdout and holdout_digit(str(q["id"])))])
    if fold is not None:
        i, k = check_fold(fold)
        queries = [q for q in queries if fold_of(str(q["id"]), k) != i]
    fit_q = [q for q in queries if not (holdout and holdout_digit(str(q["id"])))]
    held_q = [q for q in queries if holdout and holdout_digit(str(q["id"]))]

    base = base_model_dir(settings)
    shape, weights = read_base_weights(base)
    embedder = load_embedder(settings)
    t0 = time.perf_counter()
    docs = embed_factchecks(embedder, factchecks)
    embed_s = time.perf_counter() - t0

    tok, _pad, _len = open_tokenizer(base, settings.max_seq_length)

    def token_ids(qs: list[dict[str, Any]]) -> list[list[int]]:
        texts = []
        for q in qs:
            text = normalize_post(q["text"]) or q["text"].strip()
            texts.append(settings.query_prefix + VARIANTS["post"](text, q.get("lang")))
        return [e.ids for e in tok.encode_batch(texts)] if texts else []

    def rel(qs: list[dict[str, Any]]) -> list[set[int]]:
        return [{doc_pos[f] for f in dataset.qrels["all"][str(q["id"])] if f in doc_pos} for q in qs]

    tower = Tower(jax, shape, weights, options)
    t0 = time.perf_counter()
    fit_cache, held_cache = tower.cache(token_ids(fit_q)), tower.cache(token_ids(held_q))
    cache_s = time.perf_counter() - t0
    fit_rel, held_rel = rel(fit_q), rel(held_q)

    def scores(params: Any) -> dict[str, Any]:
        out = {"train": dense_map5(tower.encode(params, fit_cache), docs, fit_rel)}
        if held_q:
            out["holdout"] = dense_map5(tower.encode(params, held_cache), docs, held_rel)
        return out

    history: list[dict[str, Any]] = [{"epoch": 0, **scores(tower.params)}]

    def on_epoch(epoch: int, loss: float, info: dict[str, Any]) -> None:
        history.append({"epoch": epoch, "loss": round(loss, 4), "seconds": info["seconds"],
                        **(scores(info["params"]) if holdout else {})})
        log.info("epoch %d: %s", epoch, history[-1])

    # a fold adapter takes as many optimizer steps as the adapter trained on every training query:
    # the cosine scale moves with training (CLEF-2020: top-1 similarity 0.87 after 48 steps, 0.82
    # after 72), and a confidence model fitted on fold towers must see the final tower's scale
    steps = options.epochs * math.ceil(n_all / options.batch_size)
    t0 = time.perf_counter()
    params = train(jax, tower, fit_cache, fit_rel, docs, options, on_epoch, steps=steps)
    train_s = time.perf_counter() - t0
    if not holdout:
        history.append({"epoch": options.epochs, **scores(params)})
    result: dict[str, Any] = {
        "name": name, "dataset": dataset.name, "training_queries": len(fit_q),
        "holdout_queries": len(held_q), "options": asdict(options), "steps": steps, "history": history,
        "seconds": {"embed_factchecks": round(embed_s, 1), "cache": round(cache_s, 1),
                    "train": round(train_s, 1), "total": round(time.perf_counter() - t_start, 1)}}
    if holdout:
        return result
    deltas = {k: (np.asarray(a), np.asarray(b)) for k, (a, b) in params.items()}
    manifest = {
        "base_model": settings.embedding_model, "kind": "query-tower-lora",
        "layers": list(range(tower.first, shape.layers)), "dataset_name": dataset.name,
        "training_rule": rule + (f", outside fold {fold[0]} of {fold[1]} (sha1 of the id)" if fold else ""),
        "training_query_ids": sorted(str(q["id"]) for q in fit_q),
        "options": asdict(options), "steps": steps, "history": history, "seconds": result["seconds"],
        "trained_on": "CPU (JAX)", "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    path = save_adapter(folder, name, deltas, options.scale * options.interpolate, manifest)
    result["path"] = str(path)
    result["bytes"] = path.stat().st_size
    return result
