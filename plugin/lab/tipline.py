"""``factsieve evaluate-tipline``: a dataset's queries replayed as tipline messages through the
same decision code the channel uses (``plugin.channels.answer.decide``) after the same match (the
one match path, as a worker runs it: ``Occasion.JOB``), for a fresh tenant.

An answer is **right** when one of the (at most ``max_results``) fact-checks it sends is among the
query's qrels. Reported: messages, answered, answered share, precision of what was answered, the
threshold; with ``choose`` also the table over thresholds and the lowest threshold whose
precision is at least ``min_precision`` (what ``tipline.json`` is chosen by, on tuning posts).
"""
from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from plugin.channels.answer import TiplineRule, decide

#: the thresholds ``choose`` walks
THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.98, 0.99)
MIN_PRECISION = 0.95


def score(matches: Mapping[str, Any], qrels: Mapping[str, set[str]], rule: TiplineRule) -> dict[str, Any]:
    """The report of ``rule`` over ``{query id: Match}`` (pure)."""
    answered = right = 0
    reasons: dict[str, int] = {}
    for qid, match in matches.items():
        reply = decide(match, rule)
        if reply.sure:
            answered += 1
            right += any(c.id in qrels.get(qid, set()) for c in reply.factchecks)
        else:
            reasons[reply.reason or "?"] = reasons.get(reply.reason or "?", 0) + 1
    n = len(matches)
    return {"messages": n, "answered": answered, "answered_share": round(answered / n, 4) if n else 0.0,
            "precision": round(right / answered, 4) if answered else None, "threshold": rule.threshold,
            "max_results": rule.max_results, "not_answered": reasons}


def choose(matches: Mapping[str, Any], qrels: Mapping[str, set[str]], rule: TiplineRule,
           thresholds: Sequence[float] = THRESHOLDS, min_precision: float = MIN_PRECISION) -> dict[str, Any]:
    """The table over ``thresholds`` and the lowest one with precision ≥ ``min_precision``."""
    rows = [score(matches, qrels, replace(rule, threshold=t)) for t in thresholds]
    ok = [r for r in rows if r["precision"] is not None and r["precision"] >= min_precision]
    return {"chosen": ok[0]["threshold"] if ok else None, "min_precision": min_precision,
            "table": [{k: r[k] for k in ("threshold", "answered", "answered_share", "precision")} for r in rows]}


def match_all(parts: Any, queries: Iterable[Mapping[str, Any]], qrels: Mapping[str, set[str]],
              config: str | None = None) -> dict[str, Any]:
    """``{query id: Match}`` for every query with qrels, each as a fresh tenant's message."""
    from plugin.search.request import MatchRequest
    from plugin.service.matching import Occasion, match_post

    tenant = f"tipline-{uuid.uuid4().hex[:8]}"
    out = {}
    for q in queries:
        qid = str(q["id"])
        if qid not in qrels:
            continue
        req = MatchRequest(text=q["text"], lang=q.get("lang"), k=10)
        out[qid] = match_post(parts, req, tenant, config=config, occasion=Occasion.JOB,
                              post={"id": f"tip-{qid}", "text": q["text"]})
    return out
