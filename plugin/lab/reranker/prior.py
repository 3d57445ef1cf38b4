"""Choose a configuration's ``rerank.rank_prior`` out of fold (``factsieve train-reranker prior``).

**Why out of fold.** The prior says how far to trust the first stage's order over the reranker's
(``matcher.rank_prior_scores``), so it must be chosen on posts neither stage trained on: the
committed reranker and query tower both saw every CLEF-2020 training tweet, and dev+test are what
we report. So for each fold ``i`` of the training tweets, a reranker (``train-reranker lora --fold
i/K``) and a query tower (``train-query-encoder --fold i/K``) trained outside it rank fold ``i``;
the prior is scored on the union, each post ranked only by models that never saw it.

Heads (the first stage's ids and the reranker's logits for its top ``top``) are gathered once;
scoring a grid of priors over them is pure (``prior_grid``) and instant.
"""
from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plugin.errors import BadInput
from plugin.lab.evaluate.metrics import evaluate_run
from plugin.search.matcher import with_rank_prior

#: the priors ``train-reranker prior`` scores unless told otherwise
DEFAULT_PRIORS = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 6.0)


@dataclass(frozen=True)
class Head:
    """One post's first-stage ranking and the reranker's logits for its top candidates."""

    query_id: str
    fold: int
    ids: tuple[str, ...]
    logits: tuple[float, ...]


def prior_order(head: Head, prior: float) -> list[str]:
    """The head reordered as ``Matcher`` orders it with this ``rank_prior`` (ties keep the fused
    order); candidates past the reranked top keep their fused order (pure)."""
    n = len(head.logits)
    # the logits themselves: probabilities would clip them where the sigmoid saturates
    scores = with_rank_prior(head.logits, range(1, n + 1), prior)
    order = sorted(range(n), key=lambda i: (-scores[i], i))
    return [head.ids[i] for i in order] + list(head.ids[n:])


def prior_grid(heads: Sequence[Head], qrels: dict[str, set[str]], priors: Sequence[float]
               ) -> dict[str, Any]:
    """MAP@5 and S@1 of every prior over all heads, with the spread over folds; ``best`` is the
    prior with the highest MAP@5 (the smallest one on a tie: the closer to the reranker's own
    order)."""
    if not heads:
        raise BadInput("no out-of-fold posts to score the priors on")
    folds = sorted({h.fold for h in heads})
    relevant = {h.query_id: qrels[h.query_id] for h in heads}
    rows = []
    for prior in priors:
        run = {h.query_id: prior_order(h, prior) for h in heads}
        overall = evaluate_run(run, relevant, ["S@1", "MAP@5"])
        per_fold = [evaluate_run({h.query_id: run[h.query_id] for h in heads if h.fold == f},
                                 {h.query_id: relevant[h.query_id] for h in heads if h.fold == f},
                                 ["MAP@5"])["MAP@5"] for f in folds]
        rows.append({"rank_prior": prior, "MAP@5": round(overall["MAP@5"], 4),
                     "S@1": round(overall["S@1"], 4),
                     "MAP@5_per_fold": [round(x, 4) for x in per_fold],
                     "MAP@5_fold_sd": round(statistics.pstdev(per_fold), 4)})
    first = evaluate_run({h.query_id: list(h.ids) for h in heads}, relevant, ["S@1", "MAP@5"])
    best = max(rows, key=lambda r: (r["MAP@5"], -r["rank_prior"]))
    return {"posts": len(heads), "folds": len(folds),
            "first_stage": {k: round(v, 4) for k, v in first.items()},
            "grid": rows, "best": best["rank_prior"]}


@dataclass(frozen=True)
class Candidates:
    """One post's first-stage ranking (by its fold's query tower) and the texts a reranker scores:
    the normalised post and the passages of its top candidates."""

    query_id: str
    fold: int
    ids: tuple[str, ...]
    text: str
    passages: tuple[str, ...]


def fold_candidates(settings: Any, dataset_path: Path, *, config: str, folds: Sequence[tuple[str, set[str]]],
                    top: int) -> tuple[list[Candidates], dict[str, Any]]:
    """Rank each fold's posts through the first stage with that fold's query tower. ``folds`` is
    ``[(query encoder, the training posts held out of fold i), ...]``; a held-out post the tower
    trained on is refused (it would not be out of fold)."""
    from plugin.embedding import load_embedder
    from plugin.embedding.adapter import find_adapter
    from plugin.index.store import Store
    from plugin.learn.train.datasets import ensure_dataset_index, load_dataset
    from plugin.models import Mode
    from plugin.search.matcher import Matcher, MatchRequest
    from plugin.search.normalize import normalize_post
    from plugin.search.rerank import passage
    from plugin.search.retrieval import retrieval_config

    dataset = load_dataset(dataset_path)
    store, embedder = Store(settings), load_embedder(settings)
    alias, _ = ensure_dataset_index(store, embedder, dataset, settings)
    base = retrieval_config(config)
    train = {str(q["id"]): q for q in dataset.queries
             if q.get("split") == "train" and dataset.qrels["all"].get(str(q["id"]))}
    out: list[Candidates] = []
    for fold, (ename, held) in enumerate(folds):
        seen_e = {str(q) for q in find_adapter(ename, settings.query_adapter_dir).manifest.get(
            "training_query_ids", [])}
        if any(qid in seen_e for qid in held):
            raise BadInput(f"query encoder {ename!r} trained on posts of fold {fold}: train the "
                           "towers and the rerankers with the same --fold I/K")
        cfg = base.model_copy(update={"query_encoder": ename, "rerank": None})
        matcher = Matcher(store, embedder, settings, alias=alias, config=cfg)
        for qid in (q for q in train if q in held):
            q = train[qid]
            result = matcher.match(MatchRequest(text=q["text"], lang=q.get("lang"), mode=Mode.MONO,
                                                k=max(top, 10)))
            text = normalize_post(q["text"]) or q["text"].strip()
            out.append(Candidates(qid, fold, tuple(m["id"] for m in result.matches), text,
                                  tuple(passage(m) for m in result.matches[:top])))
    return out, {"dataset": dataset.name, "config": config, "top": top,
                 "qrels": {c.query_id: dataset.qrels["all"][c.query_id] for c in out}}


def gather_heads(settings: Any, dataset_path: Path, *, config: str, rerankers: Sequence[str],
                 encoders: Sequence[str], adapters: Path, top: int) -> tuple[list[Head], dict[str, Any]]:
    """Each fold's posts (the training posts reranker ``i`` did not train on) ranked by the first
    stage with fold ``i``'s query tower, their top ``top`` scored by fold ``i``'s reranker."""
    from plugin.learn.train.datasets import load_dataset
    from plugin.build.adapted import build_lora_reranker
    from plugin.search.lora_reranker import find_reranker_adapter
    from plugin.search.rerank import OnnxCrossEncoder

    if len(rerankers) != len(encoders) or len(rerankers) < 2:
        raise BadInput("--rerankers and --query-encoders name the same folds, in the same order "
                       "(at least two)")
    train = [str(q["id"]) for q in load_dataset(dataset_path).queries if q.get("split") == "train"]
    radapters = [find_reranker_adapter(r, adapters) for r in rerankers]
    folds = []
    for rname, radapter, ename in zip(rerankers, radapters, encoders):
        seen_r = {str(q) for q in radapter.manifest.get("training_query_ids", [])}
        if not seen_r:
            raise BadInput(f"reranker {rname!r} lists no training posts: train it with --fold I/K")
        folds.append((ename, {qid for qid in train if qid not in seen_r}))
    cands, meta = fold_candidates(settings, dataset_path, config=config, folds=folds, top=top)
    heads: list[Head] = []
    for fold, (rname, radapter) in enumerate(zip(rerankers, radapters)):
        folder = build_lora_reranker(settings, rname, folder=adapters)
        reranker = OnnxCrossEncoder(folder, model_file=folder / "onnx" / "model.onnx",
                                    max_seq_length=int(radapter.manifest.get("max_length", 128)),
                                    activation="none")
        for c in (c for c in cands if c.fold == fold):
            logits = reranker.logits(c.text, list(c.passages))
            heads.append(Head(c.query_id, fold, c.ids, tuple(float(x) for x in logits)))
    meta["folds"] = [{"reranker": r, "query_encoder": e, "posts": sum(h.fold == i for h in heads)}
                     for i, (r, e) in enumerate(zip(rerankers, encoders))]
    return heads, meta
