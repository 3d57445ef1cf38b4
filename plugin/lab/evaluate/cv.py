"""Choosing one parameter by cross-validation, and saying how sure we are.

A small evaluation set (the SemEval-2025 trial sample has 35 posts) rewards whatever value fits
its queries best; the score of the best value on all of them is optimistic. ``tune`` runs every
candidate value on every query once, then, for each of ``folds`` × ``repeats`` splits, picks the
value best on the other folds and scores it on the held-out one: the mean and spread of those
held-out scores are what the choice is worth on queries it did not see.
"""
from __future__ import annotations

import hashlib
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from plugin.lab.evaluate.metrics import average_precision_at_k, success_at_k
from plugin.learn.train.datasets import Dataset, ensure_dataset_index
from plugin.models import Mode
from plugin.search.matcher import Matcher, MatchRequest
from plugin.search.retrieval import RetrievalConfig


def folds_of(ids: Iterable[str], folds: int, repeat: int) -> list[list[str]]:
    """``folds`` disjoint folds of ``ids``, a deterministic shuffle per ``repeat`` (pure)."""
    order = sorted(ids, key=lambda q: hashlib.sha1(f"{repeat}:{q}".encode()).hexdigest())
    return [order[i::folds] for i in range(folds)]


def cross_validate(scores: Mapping[Any, Mapping[str, float]], *, folds: int = 5,
                   repeats: int = 10) -> dict[str, Any]:
    """``scores[value][query]`` (e.g. AP@5) → held-out mean and spread of the value chosen on the
    other folds (ties: the value listed first), the values chosen, and every value's mean on
    all queries (pure)."""
    values = list(scores)
    queries = sorted(set.intersection(*(set(s) for s in scores.values())))
    held: list[float] = []
    chosen: dict[str, int] = {}
    for r in range(repeats):
        for fold in folds_of(queries, folds, r):
            if not fold:
                continue
            out = set(fold)
            train = [q for q in queries if q not in out]
            best = max(values, key=lambda v: (statistics.fmean(scores[v][q] for q in train), -values.index(v)))
            chosen[str(best)] = chosen.get(str(best), 0) + 1
            held.append(statistics.fmean(scores[best][q] for q in fold))
    return {"n_queries": len(queries), "folds": folds, "repeats": repeats,
            "held_out": {"mean": round(statistics.fmean(held), 4),
                         "std": round(statistics.pstdev(held), 4), "n": len(held)},
            "chosen": chosen,
            "all_queries": {str(v): round(statistics.fmean(scores[v][q] for q in queries), 4)
                            for v in values}}


def per_query(matcher: Matcher, config: RetrievalConfig, queries: Sequence[dict[str, Any]],
              qrels: Mapping[str, set[str]], mode: Mode) -> dict[str, dict[str, float]]:
    """``{query: {"AP@5", "S@10"}}`` of one configuration on the queries that have qrels."""
    out = {}
    for q in queries:
        qid = str(q["id"])
        if qid not in qrels:
            continue
        result = matcher.match(MatchRequest(text=q["text"], lang=q.get("lang"), mode=mode, k=10), config)
        ranked = [m["id"] for m in result.matches]
        out[qid] = {"AP@5": average_precision_at_k(ranked, qrels[qid], 5),
                    "S@10": success_at_k(ranked, qrels[qid], 10)}
    return out


def tune(store: Any, embedder: Any, settings: Any, dataset: Dataset, config: RetrievalConfig,
         param: str, values: Sequence[float], *, modes: Sequence[str] = ("auto",),
         baselines: Mapping[str, RetrievalConfig] | None = None, folds: int = 5,
         repeats: int = 10, splits: Sequence[str] | None = None) -> dict[str, Any]:
    """Every value of ``config``'s ``param`` on the dataset's queries in each mode (``auto``:
    every query; ``cross``/``mono``: the queries of crosslingual/monolingual pairs, as
    ``evaluate`` runs them), cross-validated on AP@5; ``baselines`` (other configurations) scored
    on the same queries for comparison. ``splits``: only the queries of these splits (tune on
    ``train``; report the others once, with ``evaluate``)."""
    if param not in RetrievalConfig.model_fields or param in ("name", "retrievers", "rerank"):
        raise ValueError(f"{param!r} is not a numeric configuration field")
    alias, _ = ensure_dataset_index(store, embedder, dataset, settings)
    matcher = Matcher(store, embedder, settings, alias=alias, config=config)
    queries = [q for q in dataset.queries if splits is None or q.get("split") in splits]
    out: dict[str, Any] = {"dataset": str(dataset.path), "extra_corpora": [str(p) for p in dataset.extra],
                           "config": config.name, "param": param, "values": list(values),
                           "splits": list(splits) if splits else "all", "modes": {}}
    for mode_name in modes:
        mode = Mode.parse(mode_name)
        qrels = dataset.qrels["all" if mode is Mode.AUTO or not dataset.has_pair_kinds else mode.value]
        per_value = {v: per_query(matcher, config.model_copy(update={param: v}), queries, qrels, mode)
                     for v in values}
        cv = cross_validate({v: {q: s["AP@5"] for q, s in got.items()} for v, got in per_value.items()},
                            folds=folds, repeats=repeats)
        base = {}
        for name, cfg in (baselines or {}).items():
            got = per_query(matcher, cfg, queries, qrels, mode)
            base[name] = {"MAP@5": round(statistics.fmean(s["AP@5"] for s in got.values()), 4),
                          "S@10": round(statistics.fmean(s["S@10"] for s in got.values()), 4),
                          # the same folds' spread, for a fair comparison with the held-out score
                          "fold_std": cross_validate({0: {q: s["AP@5"] for q, s in got.items()}},
                                                     folds=folds, repeats=repeats)["held_out"]["std"]}
        out["modes"][mode_name] = {**cv, "S@10": {str(v): round(statistics.fmean(
            s["S@10"] for s in got.values()), 4) for v, got in per_value.items()}, "baselines": base}
    return out
