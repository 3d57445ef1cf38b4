"""The previously-fact-checked stage's pure parts: whether a configuration looks up, whether a
match is sure enough to answer the claim with its published rating, and the two results the
stage builds (a fact-check found; none clears the threshold)."""
from __future__ import annotations

from typing import Any

from plugin.models import Verdict, normalise_rating
from plugin.verify import steps
from plugin.verify.config import VerificationConfig
from plugin.verify.result import ClosestMatch, FactCheckCitation, FactCheckRef, Outcome, Statement


def looks_up(cfg: VerificationConfig) -> bool:
    """Whether a configuration has a previously-fact-checked stage at all."""
    return cfg.lookup_min_confidence is not None or cfg.lookup_min_score is not None


def clears(match: dict[str, Any], cfg: VerificationConfig) -> bool:
    """Whether ``match`` is sure enough to answer the claim with its published rating: its
    calibrated confidence against ``lookup_min_confidence`` when it has one, else its kNN
    similarity against ``lookup_min_score`` (a retrieval configuration without a confidence
    model, or server-side fusion); neither threshold met or set: no."""
    if cfg.lookup_min_confidence is not None and match.get("confidence") is not None:
        return float(match["confidence"]) >= cfg.lookup_min_confidence
    if cfg.lookup_min_score is not None:
        return (similarity(match) or 0.0) >= cfg.lookup_min_score
    return False


def similarity(match: dict[str, Any]) -> float | None:
    """How close a match is to the claim, on an absolute scale: its best kNN score (Lucene's
    cosine score, (1 + cos) / 2). The fused score cannot serve: RRF scores ranks, so every top
    match of every claim scores about the same, related or not."""
    dense = [e["score"] for name, e in (match.get("explain") or {}).items() if name.startswith("dense:")]
    return max(dense) if dense else None


def fact_check_found(best: dict[str, Any]) -> Outcome | None:
    """The result of a claim a published fact-check answers (``best``, cleared), or ``None`` when
    its rating normalises to no verdict."""
    rating = best.get("verdict") or normalise_rating(best.get("rating"))
    verdict = rating.value if isinstance(rating, Verdict) else rating
    if not verdict:
        return None
    ref = FactCheckRef.of(best)
    statement = (f"A fact-check published by {best.get('publisher') or best.get('domain') or 'a fact-checker'} "
                 f"rated the claim \u201c{best.get('claim')}\u201d as {best.get('rating') or verdict}.")
    return Outcome(verdict=verdict, label_scores={label: float(label == verdict) for label in steps.LABELS},
                   statements=(Statement(text=statement, sources=(1,)),), qa_pairs=(),
                   citations=(FactCheckCitation(n=1, fact_check=ref),), stage="previously-fact-checked",
                   stopped_because="fact-check-found", verdict_source="fact-check", match=ref)


def no_fact_check(best: dict[str, Any] | None, cfg: VerificationConfig) -> Outcome:
    """The result of a lookup-only configuration when no fact-check clears its threshold:
    Not Enough Evidence, and why (``best``: the closest match, if any)."""
    if best is None:
        why = "no published fact-check matches the claim"
    elif best.get("confidence") is not None and cfg.lookup_min_confidence is not None:
        why = (f"the best-matching fact-check's confidence is {best['confidence']:.4f}, under "
               f"the threshold {cfg.lookup_min_confidence}")
    else:
        why = (f"the best-matching fact-check's similarity is {similarity(best) or 0.0:.4f}, under "
               f"the threshold {cfg.lookup_min_score}")
    closest = ClosestMatch(id=best.get("id"), url=best.get("url"), claim=best.get("claim"), score=best.get("score"),
                           confidence=best.get("confidence"), similarity=similarity(best)) if best else None
    return Outcome(verdict=Verdict.NOT_ENOUGH_EVIDENCE.value, label_scores={}, statements=(), qa_pairs=(),
                   citations=(), stage="lookup", stopped_because="no-fact-check", verdict_source="none",
                   note=why, match=closest)
