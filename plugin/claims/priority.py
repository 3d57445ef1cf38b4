"""The claim queue's order: one pure function, its weights in one data file (``priority.json``).

A claim comes first when it spreads (posts today and yesterday), grows (today against
yesterday), is worth checking (its most check-worthy post), and nothing answers it yet (a fact-check
the desk confirmed needs no one; a very confident best match probably answers it).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from datetime import date, timedelta
from functools import lru_cache
from pathlib import Path

from plugin.claims.records import Claim

WEIGHTS_FILE = Path(__file__).with_name("priority.json")


@dataclass(frozen=True)
class Weights:
    spread: float
    growth: float
    check_worthiness: float
    answered: float
    likely_answered: float
    likely_answered_confidence: float
    window_days: int
    max_claims: int


@lru_cache(maxsize=1)
def weights() -> Weights:
    data = json.loads(WEIGHTS_FILE.read_text(encoding="utf-8"))
    return Weights(**{f.name: data[f.name] for f in fields(Weights)})


def terms(claim: Claim, today: date, likely: float) -> dict[str, float]:
    """The priority's terms for ``claim`` on ``today`` (before weighting); ``likely``: the best
    match's confidence from which it probably answers the claim."""
    now = claim.days.get(today.isoformat(), 0)
    before = claim.days.get((today - timedelta(days=1)).isoformat(), 0)
    fc = claim.fact_check
    return {"spread": math.log1p(now + before),
            "growth": max(-2.0, min(2.0, math.log((now + 1) / (before + 1)))),
            "check_worthiness": claim.check_worthiness or 0.0,
            "answered": 1.0 if fc is not None and fc.confirmed else 0.0,
            "likely_answered": 1.0 if fc is not None and not fc.confirmed and (fc.confidence or 0.0) >= likely else 0.0}


def priority(claim: Claim, today: date, w: Weights | None = None) -> float:
    """The claim's priority on ``today``: the weighted sum of its ``terms``."""
    w = w or weights()
    t = terms(claim, today, w.likely_answered_confidence)
    return round(sum(getattr(w, k) * v for k, v in t.items()), 6)


def ranked(claims: list[Claim], today: date, w: Weights | None = None) -> list[tuple[Claim, float]]:
    """``claims`` by priority, highest first (ties: the latest post first, then the id)."""
    scored = [(c, priority(c, today, w)) for c in claims]
    scored.sort(key=lambda cs: (-cs[1], _neg(cs[0].last_seen), cs[0].id))
    return scored


def _neg(iso: str) -> tuple[int, ...]:
    return tuple(-ord(ch) for ch in iso)
