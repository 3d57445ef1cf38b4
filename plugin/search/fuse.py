"""Rank fusion as plain functions over plain data.

Inputs are per-query rankings (``{query_name: [Hit, ...]}``, ranks 1-based); outputs are new
``Fused`` lists. Nothing here mutates its inputs, talks to a server, or knows where the hits
came from, so the client-side path and any server-side pipeline can be checked against it.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence

from plugin.models import Fused, Hit


def tie_key(doc: str) -> str:
    """What orders documents that fusion cannot tell apart (pure): a hash of the id, so the
    order is deterministic and owes nothing to how a corpus numbered its documents. Ordering
    them by the id itself favoured CLEF-2020's answers, most of which are ids under 1000 of
    10,375: with equal weights two documents often tie (ranks 1 and 3 against 3 and 1), and
    the id order was worth +0.017 MAP@5 on its training tweets, measured."""
    return hashlib.sha1(doc.encode("utf-8")).hexdigest()


def _finish(scores: dict[str, float], contributions: dict[str, dict[str, Hit]]) -> list[Fused]:
    # ties: higher score, then the better best-rank, then ``tie_key`` (deterministic)
    def key(doc: str) -> tuple[float, int, str]:
        return (-scores[doc], min(h.rank for h in contributions[doc].values()), tie_key(doc))

    ordered = sorted(scores, key=key)
    return [Fused(id=doc, score=scores[doc], rank=i, contributions=contributions[doc])
            for i, doc in enumerate(ordered, start=1)]


def rrf_fuse(rankings: Mapping[str, Sequence[Hit]], weights: Mapping[str, float] | None = None,
             k: int = 60, *, stand_ins: Mapping[str, str] | None = None,
             blind: Callable[[Hit], bool] | None = None) -> list[Fused]:
    """Weighted Reciprocal Rank Fusion (Cormack et al. 2009).

    score(d) = Σ_q w_q / (k + rank_q(d)), ranks 1-based, k = 60 by default, w_q = 1 for a query
    without a weight. A query with weight 0 still shows in the explanation but adds nothing.
    ``stand_ins``/``blind``: see ``stand_in_terms``.
    """
    if k < 0:
        raise ValueError("k must be >= 0")
    units = {name: {h.id: 1.0 / (k + h.rank) for h in hits} for name, hits in rankings.items()}
    return _combine(rankings, units, weights, stand_ins, blind)


#: neural-search's min-max score for a sub-query's lowest hit (``MIN_SCORE``), so that a
#: document found by a sub-query never counts as not found by it
MINMAX_FLOOR = 0.001


def minmax_fuse(rankings: Mapping[str, Sequence[Hit]],
                weights: Mapping[str, float] | None = None, *,
                stand_ins: Mapping[str, str] | None = None,
                blind: Callable[[Hit], bool] | None = None) -> list[Fused]:
    """Weighted sum of min-max normalised scores (the neural-search normalization processor's
    ``min_max`` + ``arithmetic_mean`` combination, before division by the weight total).

    A query whose hits all share one score normalises them to 1.0; the lowest-scored hit of a
    query gets ``MINMAX_FLOOR`` rather than 0, as neural-search 2.19 gives it (measured: it
    kept the two paths' scores apart by 0.3 × 0.001 for a 0.3-weighted query's last hit). A
    document absent from a query contributes 0 for it. ``stand_ins``/``blind``: see
    ``stand_in_terms``.
    """
    units: dict[str, dict[str, float]] = {}
    for name, hits in rankings.items():
        if not hits:
            continue
        lo = min(h.score for h in hits)
        hi = max(h.score for h in hits)
        units[name] = {h.id: 1.0 if hi == lo else (h.score - lo) / (hi - lo) or MINMAX_FLOOR
                       for h in hits}
    return _combine(rankings, units, weights, stand_ins, blind)


def stand_in_terms(rankings: Mapping[str, Sequence[Hit]], units: Mapping[str, Mapping[str, float]],
                   stand_ins: Mapping[str, str], blind: Callable[[Hit], bool]) -> dict[str, dict[str, float]]:
    """Per query, the unit terms it gains from its stand-in (pure).

    A query can be blind to some documents: BM25 over the post's language sees a fact-check in
    another language only through shared names and numbers. Counting its silence as evidence
    against them buries a crosslingual match under same-language near-misses (issue 12: the
    demo's Korean post). For a query ``b`` with stand-in ``p`` (``stand_ins[b] == p``), each hit
    of ``p`` that ``b`` is blind to (``blind(hit)``) gets ``b``'s term raised to ``p``'s:
    ``term_b(d) = max(term_b(d), term_p(d))``, weighted by ``w_b`` as usual. Documents ``b`` can
    see are fused exactly as without stand-ins.
    """
    extra: dict[str, dict[str, float]] = {}
    for name, proxy in stand_ins.items():
        if name not in rankings or proxy not in units:
            continue
        own = units.get(name, {})
        for hit in rankings[proxy]:
            gain = units[proxy][hit.id] - own.get(hit.id, 0.0)
            if gain > 0 and blind(hit):
                extra.setdefault(name, {})[hit.id] = gain
    return extra


def _combine(rankings: Mapping[str, Sequence[Hit]], units: Mapping[str, Mapping[str, float]],
             weights: Mapping[str, float] | None, stand_ins: Mapping[str, str] | None,
             blind: Callable[[Hit], bool] | None) -> list[Fused]:
    """score(d) = Σ_q w_q · (unit_q(d) + stand-in gain_q(d)); a new ``Fused`` list."""
    extra = stand_in_terms(rankings, units, stand_ins, blind) if stand_ins and blind else {}
    scores: dict[str, float] = {}
    contributions: dict[str, dict[str, Hit]] = {}
    for name, hits in rankings.items():
        w = 1.0 if weights is None else float(weights.get(name, 1.0))
        for hit in hits:
            scores[hit.id] = scores.get(hit.id, 0.0) + w * units[name][hit.id]
            contributions.setdefault(hit.id, {})[name] = hit
        for doc, gain in extra.get(name, {}).items():
            scores[doc] = scores.get(doc, 0.0) + w * gain
    return _finish(scores, contributions)
