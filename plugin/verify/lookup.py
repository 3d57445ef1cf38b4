"""Claim verification. For now only its first stage: *previously fact-checked*.

Following the usual fact-checking pipeline (detect → match previously fact-checked claims →
retrieve evidence → predict a verdict), a claim that professional fact-checkers already reviewed
gets their published rating, normalised to the AVeriTeC verdict classes, with the fact-check as
the citation. Evidence retrieval and verdict prediction for new claims are not built yet, and
the result says so (``stage``), so callers never mistake a lookup for a full verification.
"""
from __future__ import annotations

from typing import Any

from plugin.search.matcher import Matcher, MatchRequest
from plugin.models import Verdict, normalise_rating

STAGE = "previously-fact-checked"
NOTE = ("Only the previously-fact-checked stage ran: the verdict is the published rating of the "
        "best-matching fact-check (normalised), with that fact-check as the citation. No score "
        "threshold is applied and no evidence retrieval or verdict model runs yet; judge the "
        "match score and the cited claim before relying on it.")


def previously_fact_checked(matcher: Matcher, request: MatchRequest) -> dict[str, Any]:
    result = matcher.match(request)
    best = result.matches[0] if result.matches else None
    if best is None:
        verdict, rating, citation = Verdict.NOT_ENOUGH_EVIDENCE.value, None, None
    else:
        found = best.get("verdict") or normalise_rating(best.get("rating"))
        verdict = (found.value if isinstance(found, Verdict) else found) or Verdict.NOT_ENOUGH_EVIDENCE.value
        rating = best.get("rating")
        citation = {k: best.get(k) for k in ("id", "url", "title", "claim", "publisher",
                                             "published_at", "lang", "score")}
    return {"stage": STAGE, "note": NOTE, "claim": request.text, "lang": result.lang,
            "verdict": verdict, "rating": rating, "citation": citation,
            "config": result.config, "reranked": result.reranked, "matches": result.matches}
