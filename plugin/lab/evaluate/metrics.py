"""Retrieval metrics as plain functions over plain data.

A *run* is ``{query_id: [doc_id, ...]}`` (ranked, best first); *qrels* are
``{query_id: {doc_id, ...}}`` (the relevant documents). Printed names follow the literature:
``S@10`` (Success@10, the SemEval-2025 Task 7 measure: 1 if any relevant document is in the top
10 — not Recall@10, which counts the fraction of relevant documents found), ``MRR@10``,
``R@100``, and ``MAP@5`` (CLEF CheckThat! 2020 Task 2's official measure).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence, Set


def success_at_k(ranked: Sequence[str], relevant: Set[str], k: int) -> float:
    """1.0 when at least one relevant document is ranked in the top ``k``."""
    return 1.0 if any(d in relevant for d in ranked[:k]) else 0.0


def reciprocal_rank_at_k(ranked: Sequence[str], relevant: Set[str], k: int) -> float:
    """1 / rank of the first relevant document within the top ``k`` (ranks 1-based), else 0."""
    for i, d in enumerate(ranked[:k], start=1):
        if d in relevant:
            return 1.0 / i
    return 0.0


def recall_at_k(ranked: Sequence[str], relevant: Set[str], k: int) -> float:
    """Fraction of the relevant documents found in the top ``k``."""
    if not relevant:
        return 0.0
    return len(set(ranked[:k]) & relevant) / len(relevant)


def average_precision_at_k(ranked: Sequence[str], relevant: Set[str], k: int) -> float:
    """AP@k as trec_eval's ``map_cut``: Σ precision@i over relevant hits i ≤ k, divided by the
    number of relevant documents (all of them, not only those within k)."""
    if not relevant:
        return 0.0
    hits, total = 0, 0.0
    seen: set[str] = set()
    for i, d in enumerate(ranked[:k], start=1):
        if d in relevant and d not in seen:
            hits += 1
            total += hits / i
        seen.add(d)
    return total / len(relevant)


#: printed name → (function, k)
METRICS = {
    "S@1": (success_at_k, 1),
    "S@5": (success_at_k, 5),
    "S@10": (success_at_k, 10),
    "MAP@5": (average_precision_at_k, 5),
    "MRR@10": (reciprocal_rank_at_k, 10),
    "R@100": (recall_at_k, 100),
}


def evaluate_run(run: Mapping[str, Sequence[str]], qrels: Mapping[str, Set[str]],
                 metrics: Sequence[str] = tuple(METRICS)) -> dict[str, float]:
    """Mean of each metric over the queries that have qrels (a query missing from the run
    scores 0, so a crashed query cannot flatter the result)."""
    qids = [q for q in qrels if qrels[q]]
    if not qids:
        return {m: 0.0 for m in metrics}
    out = {}
    for name in metrics:
        fn, k = METRICS[name]
        out[name] = sum(fn(run.get(q, []), qrels[q], k) for q in qids) / len(qids)
    return out


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0 ≤ q ≤ 1) as the nearest-rank value of the sorted sample, no
    interpolation: p50/p95 of a latency run are latencies that were measured. 0.0 when empty."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))]
