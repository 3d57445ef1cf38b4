"""The LoRA reranker trained on an accelerator box: ``train-reranker lora-pack`` writes what it
needs here, ``scripts/train_lora_remote.py`` trains a sweep there (numpy + JAX only), and
``train-reranker lora-import`` finishes the adapter it wrote back.

**Why.** On 2 cores one LoRA reranker takes 16-22 minutes, so the blend's rank prior was chosen
for one set of hyper-parameters only (3 fold rerankers + the final one). On a GPU the same code
(``lora.PairScorer`` and ``lora.train``, the same loss and schedule) trains each in seconds, so a
sweep over capacity (adapted layers, rank, epochs, negatives) can be scored the way the prior is:
out of fold, on posts neither the reranker nor the first stage trained on.

**What travels** (``pack.npz``, ~55 MB): the base encoder in fp16 with its 250k-row word-embedding
matrix cut to the tokens the pairs use (frozen: LoRA adapts the layers' matrices only, so the
adapter is the same one the full matrix would give), the training groups as token ids renumbered
into that vocabulary, and each training post's out-of-fold first-stage candidates (ranked by the
fold's query tower here, as ``train-reranker prior`` ranks them). No tokenizer, no OpenSearch, no
settings: the box needs numpy and JAX. What comes back: for every sweep entry the out-of-fold
logits of those candidates (``heads-*.json``, scored here by ``prior.prior_grid``) and the adapter
trained on every training group (``<name>.npz`` + ``.json``).
"""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from plugin.errors import BadInput

log = logging.getLogger(__name__)

PACK_KIND = "factsieve-lora-reranker-pack"
WORD_EMBEDDINGS = "embeddings.word_embeddings.weight"


def flatten(pairs: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Ragged token-id lists as (lengths, concatenated ids) (pure)."""
    lengths = np.array([len(p) for p in pairs], dtype=np.int32)
    flat = np.fromiter((t for p in pairs for t in p), dtype=np.int64, count=int(lengths.sum()))
    return lengths, flat


def unflatten(lengths: np.ndarray, flat: np.ndarray) -> list[list[int]]:
    """``flatten``'s inverse (pure)."""
    ends = np.cumsum(lengths)
    return [flat[e - n:e].tolist() for n, e in zip(lengths.tolist(), ends.tolist())]


def prune_vocabulary(pairs: Sequence[Sequence[int]], word_embeddings: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The rows of ``word_embeddings`` the pairs use and the map old id -> new id (pure); the
    pairs renumbered through it index the cut matrix exactly as they indexed the whole one."""
    used = np.unique(np.fromiter((t for p in pairs for t in p), dtype=np.int64))
    if len(used) and used[-1] >= len(word_embeddings):
        raise BadInput(f"token id {int(used[-1])} is past the model's vocabulary ({len(word_embeddings)})")
    remap = np.full(len(word_embeddings), -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    return word_embeddings[used], remap


def write_lora_pack(settings: Any, source: Any, dest: Path, *, dataset_path: Path,
                    encoders: Sequence[str], config: str = "factsieve", top: int = 10,
                    negatives: int = 49, max_length: int = 128) -> dict[str, Any]:
    """``train-reranker lora-pack``: the groups (mined or read), each training post's out-of-fold
    candidates (fold ``i`` = ``query_tower.fold_of(id, len(encoders)) == i``, ranked with
    ``encoders[i]``, a tower trained with ``--fold i/K``) and the pruned base model, in one npz."""
    from plugin.embedding.onnx_backend import open_tokenizer
    from plugin.build.adapted import read_base_weights
    from plugin.embedding.query_tower import base_model_dir
    from plugin.lab.query_tower import fold_of
    from plugin.lab.reranker.lora import adapter_manifest
    from plugin.learn.train.lora import encode_pairs
    from plugin.lab.reranker.prior import fold_candidates

    if len(encoders) < 2:
        raise BadInput("--query-encoders names one fold tower per fold (at least two)")
    t0 = time.perf_counter()
    groups, meta = source.load(settings)
    base = base_model_dir(settings)
    shape, weights = read_base_weights(base)
    tok, _pad, _len = open_tokenizer(base, max_length)
    group_pairs = encode_pairs(tok, groups, negatives)
    k = len(encoders)
    qids = [g.query_id for g in groups]
    folds = [(name, {q for q in qids if fold_of(q, k) == i}) for i, name in enumerate(encoders)]
    cands, cmeta = fold_candidates(settings, dataset_path, config=config, folds=folds, top=top)
    cand_pairs = [[e.ids for e in tok.encode_batch([(c.text, p) for p in c.passages])] for c in cands]

    header = {
        "shape": asdict(shape), "folds": k, "max_length": max_length,
        "negatives": negatives, "group_query_ids": qids,
        "candidates": [{"query_id": c.query_id, "fold": c.fold, "ids": list(c.ids)} for c in cands],
        "qrels": {q: sorted(v) for q, v in cmeta["qrels"].items()},
        "first_stage": {"config": config, "query_encoders": list(encoders), "top": top},
        # what ``train_lora_reranker`` writes in an adapter's manifest, the rest filled there
        "manifest": adapter_manifest(settings, meta, set(qids), max_length)}
    dest = Path(dest)
    vocabulary = save_pack(dest, header, weights, group_pairs, cand_pairs)
    return {"path": str(dest), "bytes": dest.stat().st_size, "vocabulary": vocabulary,
            "groups": len(groups), "group_pairs": sum(map(len, group_pairs)), "candidate_posts": len(cands),
            "candidate_pairs": sum(map(len, cand_pairs)), "folds": k, "seconds": round(time.perf_counter() - t0, 1)}


def save_pack(dest: Path, header: dict[str, Any], weights: dict[str, np.ndarray],
              group_pairs: Sequence[Sequence[Sequence[int]]],
              cand_pairs: Sequence[Sequence[Sequence[int]]]) -> int:
    """Write a pack: the encoder's weights in fp16 with the word embeddings cut to the tokens the
    pairs use, the pairs renumbered into that vocabulary, and the header; returns the
    vocabulary's size. ``read_pack`` reads it back."""
    all_pairs = [p for g in group_pairs for p in g] + [p for c in cand_pairs for p in c]
    cut, remap = prune_vocabulary(all_pairs, weights[WORD_EMBEDDINGS])
    arrays = {f"w/{name}": np.asarray(w, dtype=np.float16) for name, w in weights.items()
              if name.startswith(("encoder.layer.", "embeddings.")) and name != WORD_EMBEDDINGS}
    arrays[f"w/{WORD_EMBEDDINGS}"] = cut.astype(np.float16)
    dtype = np.uint16 if len(cut) <= 2**16 else np.int32
    for prefix, grouped in (("group", group_pairs), ("cand", cand_pairs)):
        lengths, flat = flatten([p for g in grouped for p in g])
        arrays.update({f"{prefix}_sizes": np.array([len(g) for g in grouped], np.int32),
                       f"{prefix}_lengths": lengths, f"{prefix}_tokens": remap[flat].astype(dtype)})
    arrays["header"] = np.frombuffer(json.dumps({"kind": PACK_KIND, **header}).encode("utf-8"), dtype=np.uint8)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with dest.open("wb") as fh:
        np.savez(fh, **arrays)
    return len(cut)


def read_pack(path: Path) -> tuple[dict[str, Any], Any, dict[str, np.ndarray], list[list[list[int]]],
                                   list[list[list[int]]]]:
    """``(header, shape, fp32 weights, group pairs, candidate pairs)`` from ``write_lora_pack``'s file."""
    from plugin.build.graph import BertShape

    with np.load(path) as z:
        header = json.loads(bytes(z["header"]).decode("utf-8"))
        if header.get("kind") != PACK_KIND:
            raise BadInput(f"{path} is not a LoRA reranker pack (train-reranker lora-pack writes one)")
        weights = {k[2:]: z[k].astype(np.float32) for k in z.files if k.startswith("w/")}

        def grouped(prefix: str) -> list[list[list[int]]]:
            pairs = unflatten(z[f"{prefix}_lengths"], z[f"{prefix}_tokens"].astype(np.int64))
            out, i = [], 0
            for n in z[f"{prefix}_sizes"].tolist():
                out.append(pairs[i:i + n])
                i += n
            return out

        groups, cands = grouped("group"), grouped("cand")
    return header, BertShape(**header["shape"]), weights, groups, cands


def train_from_pack(jax: Any, pack: Path, out: Path, sweep: Sequence[dict[str, Any]], *,
                    device: str = "", fixed_width: bool = False) -> dict[str, Any]:
    """For each sweep entry (``LoraRerankerOptions`` fields; ``name`` names its adapter): one
    reranker outside each fold, scoring that fold's candidates (``heads-<name>.json``), then one on
    every training group (``<name>.npz`` + ``.json``). ``out/sweep.json`` is rewritten after each
    entry, so a run cut short still returns what it finished. ``fixed_width`` pads every batch to
    the pack's ``max_length`` (one compiled program per step kind: what a GPU wants)."""
    from plugin.embedding.adapter import save_adapter
    from plugin.lab.query_tower import fold_of
    from plugin.learn.train.lora import LoraRerankerOptions, PairScorer, train

    header, shape, weights, group_pairs, cand_pairs = read_pack(pack)
    k, qids = header["folds"], header["group_query_ids"]
    out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {"pack": str(pack), "device": device, "folds": k,
                               "first_stage": header["first_stage"], "qrels": header["qrels"], "entries": []}
    for entry in sweep:
        entry = dict(entry)
        name = entry.pop("name")
        options = LoraRerankerOptions(**{"max_length": header["max_length"], **entry}).validated()
        if options.negatives > header["negatives"]:
            raise BadInput(f"{name}: {options.negatives} negatives, the pack holds {header['negatives']}")
        size = 1 + options.negatives
        t0 = time.perf_counter()
        heads, histories = [], []
        all_cached: list[list[np.ndarray]] = []
        for fold in [*range(k), None]:
            scorer = PairScorer(jax, shape, weights, options)
            scorer.tower.width = options.max_length if fixed_width else None
            # the frozen layers' output is the same in every fold: computed once an entry
            all_cached = all_cached or scorer.cache_groups([g[:size] for g in group_pairs])
            fit = [i for i, q in enumerate(qids) if fold is None or fold_of(q, k) != fold]
            cached = [all_cached[i] for i in fit]
            history: list[dict[str, Any]] = []
            params = train(jax, scorer, cached, options,
                           lambda e, loss, info: history.append(
                               {"epoch": e, "loss": round(loss, 4), "seconds": info["seconds"]}))
            histories.append({"fold": fold, "groups": len(fit), "history": history})
            if fold is None:
                break
            for c, pairs in zip(header["candidates"], cand_pairs):
                if c["fold"] == fold:
                    logits = scorer.score(params, scorer.cache(pairs))
                    heads.append({**c, "logits": [round(float(x), 5) for x in logits]})
        seconds = round(time.perf_counter() - t0, 1)
        (out / f"heads-{name}.json").write_text(json.dumps(heads) + "\n")
        deltas = {w: (np.asarray(a), np.asarray(b)) for w, (a, b) in params["lora"].items()}
        head = {w: np.asarray(v) for w, v in params["head"].items()}
        manifest = {**header["manifest"], "layers": list(range(scorer.tower.first, shape.layers)),
                    "options": asdict(options), "history": histories[-1]["history"],
                    "seconds": {"sweep_entry": seconds}, "trained_on": f"{device or 'accelerator'} (JAX)",
                    "created_at": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())}
        save_adapter(out, name, deltas, options.scale, manifest, whole=head)
        summary["entries"].append({"name": name, "options": asdict(options), "folds": histories,
                                   "seconds": seconds})
        (out / "sweep.json").write_text(json.dumps(summary, indent=1) + "\n")
        log.info("%s: %.1f s", name, seconds)
    return summary


def heads_from(path: Path) -> list[Any]:
    """``heads-<name>.json`` as ``prior.Head``s."""
    from plugin.lab.reranker.prior import Head

    rows = json.loads(Path(path).read_text())
    return [Head(str(r["query_id"]), int(r["fold"]), tuple(r["ids"]), tuple(r["logits"])) for r in rows]


def sweep_report(folder: Path, priors: Sequence[float]) -> dict[str, Any]:
    """``lora-import --sweep``: every entry's out-of-fold grid of priors (``prior.prior_grid``)
    from the heads a ``train_from_pack`` run wrote, best first."""
    from plugin.lab.reranker.prior import prior_grid

    summary = json.loads((Path(folder) / "sweep.json").read_text())
    qrels = {q: set(v) for q, v in summary["qrels"].items()}
    rows = []
    for entry in summary["entries"]:
        grid = prior_grid(heads_from(Path(folder) / f"heads-{entry['name']}.json"), qrels, priors)
        best = next(r for r in grid["grid"] if r["rank_prior"] == grid["best"])
        rows.append({"name": entry["name"], "options": entry["options"], "seconds": entry["seconds"],
                     "best_prior": grid["best"], "MAP@5": best["MAP@5"], "S@1": best["S@1"],
                     "MAP@5_fold_sd": best["MAP@5_fold_sd"], "first_stage": grid["first_stage"],
                     "grid": {str(r["rank_prior"]): r["MAP@5"] for r in grid["grid"]}})
    rows.sort(key=lambda r: -r["MAP@5"])
    return {"device": summary.get("device"), "folds": summary.get("folds"),
            "posts": len(qrels), "entries": rows}


def import_adapter(settings: Any, source: Any, folder: Path, name: str, target: str,
                   out: Path | None = None) -> dict[str, Any]:
    """``lora-import --name N --as T``: adapter ``N`` of a sweep written as ``T`` (to ``out``,
    default ``build/artefacts/rerankers/``, never into the package), with the int8 check
    ``train-reranker lora`` runs."""
    from plugin.embedding.adapter import load_adapter, save_adapter
    from plugin.lab.reranker.lora import CHECK_GROUPS, INT8_MIN_TOP1, int8_agreement
    from plugin.artefacts import RERANKERS, outside_package, written_dir

    dest = outside_package(Path(out) if out is not None else written_dir(RERANKERS), "--out")
    src = Path(folder)
    if not (src / f"{name}.npz").is_file():
        raise BadInput(f"no adapter {name!r} in {src}")
    adapter = load_adapter(name, src)
    groups, _meta = source.load(settings)
    check = int8_agreement(settings, name, src, groups[:CHECK_GROUPS])
    # save_adapter writes name, scale, rank and the weight lists itself
    manifest = {k: v for k, v in adapter.manifest.items()
                if k not in ("name", "scale", "rank", "weights", "whole")}
    manifest.update(swept_as=name, int8=check["top1_agreement"] >= INT8_MIN_TOP1, int8_check=check)
    path = save_adapter(dest, target, adapter.deltas,
                        adapter.scale, manifest, whole=adapter.arrays)
    return {"path": str(path), "bytes": path.stat().st_size, "int8": manifest["int8"], "int8_check": check}
