"""Rank fusion as plain functions over plain data.

Inputs are per-query rankings (``{query_name: [Hit, ...]}``, ranks 1-based); outputs are new
``Fused`` lists. Nothing here mutates its inputs, talks to a server, or knows where the hits
came from, so the client-side path and any server-side pipeline can be checked against it.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from plugin.models import Fused, Hit


def _finish(scores: dict[str, float], contributions: dict[str, dict[str, Hit]]) -> list[Fused]:
    # ties: higher score, then the better best-rank, then id (deterministic)
    def key(doc: str) -> tuple[float, int, str]:
        return (-scores[doc], min(h.rank for h in contributions[doc].values()), doc)

    ordered = sorted(scores, key=key)
    return [Fused(id=doc, score=scores[doc], rank=i, contributions=contributions[doc])
            for i, doc in enumerate(ordered, start=1)]


def rrf_fuse(rankings: Mapping[str, Sequence[Hit]], weights: Mapping[str, float] | None = None,
             k: int = 60) -> list[Fused]:
    """Weighted Reciprocal Rank Fusion (Cormack et al. 2009).

    score(d) = Σ_q w_q / (k + rank_q(d)), ranks 1-based, k = 60 by default, w_q = 1 for a query
    without a weight. A query with weight 0 still shows in the explanation but adds nothing.
    """
    if k < 0:
        raise ValueError("k must be >= 0")
    scores: dict[str, float] = {}
    contributions: dict[str, dict[str, Hit]] = {}
    for name, hits in rankings.items():
        w = 1.0 if weights is None else float(weights.get(name, 1.0))
        for hit in hits:
            scores[hit.id] = scores.get(hit.id, 0.0) + w / (k + hit.rank)
            contributions.setdefault(hit.id, {})[name] = hit
    return _finish(scores, contributions)


#: neural-search's min-max score for a sub-query's lowest hit (``MIN_SCORE``), so that a
#: document found by a sub-query never counts as not found by it
MINMAX_FLOOR = 0.001


def minmax_fuse(rankings: Mapping[str, Sequence[Hit]],
                weights: Mapping[str, float] | None = None) -> list[Fused]:
    """Weighted sum of min-max normalised scores (the neural-search normalization processor's
    ``min_max`` + ``arithmetic_mean`` combination, before division by the weight total).

    A query whose hits all share one score normalises them to 1.0; the lowest-scored hit of a
    query gets ``MINMAX_FLOOR`` rather than 0, as neural-search 2.19 gives it (measured: it
    kept the two paths' scores apart by 0.3 × 0.001 for a 0.3-weighted query's last hit). A
    document absent from a query contributes 0 for it.
    """
    scores: dict[str, float] = {}
    contributions: dict[str, dict[str, Hit]] = {}
    for name, hits in rankings.items():
        if not hits:
            continue
        w = 1.0 if weights is None else float(weights.get(name, 1.0))
        lo = min(h.score for h in hits)
        hi = max(h.score for h in hits)
        for hit in hits:
            norm = 1.0 if hi == lo else (hit.score - lo) / (hi - lo) or MINMAX_FLOOR
            scores[hit.id] = scores.get(hit.id, 0.0) + w * norm
            contributions.setdefault(hit.id, {})[name] = hit
    return _finish(scores, contributions)


def hits_from_response(response: dict, query: str) -> list[Hit]:
    """Turn one OpenSearch search response into 1-based ranked hits."""
    return [Hit(id=h["_id"], score=float(h["_score"] or 0.0), rank=i, query=query,
                source=h.get("_source"))
            for i, h in enumerate(response["hits"]["hits"], start=1)]
