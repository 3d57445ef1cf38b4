"""``factsieve evaluate-tipline``: a dataset's queries replayed as tipline messages through the
same decision code the channel uses (``plugin.channels.answer.decide``) after the same match (the
one match path, as a worker runs it: ``Occasion.JOB``), for a fresh tenant.

An answer is **right** when one of the (at most ``max_results``) fact-checks it sends is among the
query's qrels. With ``unanswerable``, every message is also sent once as if its fact-checks (and
their near-duplicates) were not indexed (``ExcludingMatcher``): a tipline's real traffic is mostly
claims nobody has checked, and any answer there is wrong; the precision then counts both. Reported: messages, answered, answered share, precision of what was answered, the
threshold; with ``choose`` also the table over thresholds and the lowest threshold whose
precision is at least ``min_precision`` by its Wilson lower bound (what ``tipline.json`` is chosen
by, on tuning posts).
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


def score(matches: Mapping[str, Any], qrels: Mapping[str, set[str]], rule: TiplineRule,
          unanswerable: Mapping[str, Any] | None = None, *, misses: bool = False) -> dict[str, Any]:
    """The report of ``rule`` over ``{query id: Match}`` (pure); ``unanswerable``: the same
    messages matched without their fact-checks, where every answer is wrong. ``misses``: also
    each wrong answer (``{"query", "unanswerable", "sent": [{"id", "claim", "confidence"}]}``),
    to read what limits the precision."""
    answered = right = 0
    reasons: dict[str, int] = {}
    wrong: list[dict[str, Any]] = []

    def sent(reply: Any) -> list[dict[str, Any]]:
        return [{"id": c.id, "claim": c.claim, "confidence": c.confidence} for c in reply.factchecks]

    for qid, match in matches.items():
        reply = decide(match, rule)
        if reply.sure:
            answered += 1
            ok = any(c.id in qrels.get(qid, set()) for c in reply.factchecks)
            right += ok
            if not ok:
                wrong.append({"query": qid, "unanswerable": False, "sent": sent(reply)})
        else:
            reasons[reply.reason or "?"] = reasons.get(reply.reason or "?", 0) + 1
    wrong_unanswerable = 0
    for qid, match in (unanswerable or {}).items():
        reply = decide(match, rule)
        if reply.sure:
            wrong_unanswerable += 1
            wrong.append({"query": qid, "unanswerable": True, "sent": sent(reply)})
    n = len(matches) + len(unanswerable or {})
    total = answered + wrong_unanswerable
    out = {"messages": n, "answered": total, "answered_share": round(total / n, 4) if n else 0.0,
           "right": right, "precision": round(right / total, 4) if total else None, "threshold": rule.threshold,
           "max_results": rule.max_results, "not_answered": reasons}
    if unanswerable is not None:
        out["answerable"] = {"messages": len(matches), "answered": answered,
                             "precision": round(right / answered, 4) if answered else None}
        out["unanswerable"] = {"messages": len(unanswerable), "answered_wrongly": wrong_unanswerable}
    if misses:
        out["misses"] = wrong
    return out


def choose(matches: Mapping[str, Any], qrels: Mapping[str, set[str]], rule: TiplineRule,
           thresholds: Sequence[float] = THRESHOLDS, min_precision: float = MIN_PRECISION,
           unanswerable: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The table over ``thresholds`` and the lowest one whose precision is at least
    ``min_precision`` by the lower end of its one-sided 95 % Wilson interval (``precision_low``:
    ``plugin.learn.tier.wilson_lower``, the rule the auto-confirm tier is chosen by): a few
    hundred answers cannot tell 0.96 from 0.94, and a tipline's answers go to the public."""
    from plugin.learn.tier import wilson_lower

    rows = [score(matches, qrels, replace(rule, threshold=t), unanswerable) for t in thresholds]
    for r in rows:
        r["precision_low"] = round(wilson_lower(r["right"], r["answered"]), 4)
    ok = [r for r in rows if r["answered"] and r["precision_low"] >= min_precision]
    return {"chosen": ok[0]["threshold"] if ok else None, "min_precision": min_precision,
            "rule": "the lowest threshold whose precision_low (one-sided 95 % Wilson) is at least min_precision",
            "table": [{k: r[k] for k in ("threshold", "answered", "answered_share", "precision", "precision_low")}
                      for r in rows]}


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


def match_unanswerable(store: Any, embedder: Any, settings: Any, alias: str, dataset: Any,
                       queries: Iterable[Mapping[str, Any]], config: Any, reranker: Any) -> dict[str, Any]:
    """``{query id: Match}`` of every query with qrels matched as if its fact-checks and their
    near-duplicates were not indexed (the configuration a worker runs, reranked as it is)."""
    import json
    from pathlib import Path

    from plugin.lab.excluding import ExcludingMatcher, claim_words, duplicates_of
    from plugin.search.request import MatchRequest
    from plugin.search.result import Match

    qrels = dataset.qrels["all"]
    with open(Path(dataset.path) / "factchecks.jsonl", encoding="utf-8") as fh:
        words = claim_words({str(r["id"]): r.get("claim") or "" for r in map(json.loads, filter(str.strip, fh))})
    matcher = ExcludingMatcher(store, embedder, settings, alias=alias, config=config, reranker=reranker)
    out = {}
    for q in queries:
        qid = str(q["id"])
        if qid not in qrels:
            continue
        req = MatchRequest(text=q["text"], lang=q.get("lang"), k=10, rerank=True)
        out[qid] = Match.of(matcher.match_without(req, duplicates_of(qrels[qid], words)), {})
    return out
