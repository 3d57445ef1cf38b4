"""The auto-confirm tier: the confidence above which a tenant's top matches are right often
enough to confirm without a person (pure).

Measured on held-out decisions (``plugin.learn.calibrate``): each held-out post's top candidate
with its (recalibrated) confidence and whether the reviewer confirmed it. The tier is the lowest
threshold ``t`` such that the top candidates at or above ``t`` were right at least ``PRECISION``
of the time, over at least ``MIN_ITEMS`` of them: everything at or above it would have been
confirmed, so it is that whole set's precision that must hold, not a band's. "Right at least
``PRECISION`` of the time" is asked of the lower bound of the one-sided 95 % Wilson interval
(``wilson_lower``), not of the observed share: 38 right of 40 is 95 %, but a set that size
cannot show it (on CLEF-2020 such a tier confirmed 12 % wrong matches on unseen posts). With
all held-out tops right, about 55 of them are needed. None when no threshold reaches it, with
the reason.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: the held-out precision the auto-confirmed set must reach
PRECISION = 0.95
#: a tier needs at least this many held-out top candidates at or above it (the Wilson bound
#: asks for more whenever one is wrong)
MIN_ITEMS = 30
#: the one-sided 95 % normal quantile of the Wilson bound
Z = 1.645


def wilson_lower(hits: int, n: int, z: float = Z) -> float:
    """The lower end of the Wilson score interval of ``hits / n`` (0 when ``n`` is 0)."""
    if n == 0:
        return 0.0
    p = hits / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - spread) / (1 + z * z / n)


@dataclass(frozen=True)
class Tier:
    #: the lowest confidence confirmed automatically; ``None``: no tier
    threshold: float | None
    #: the held-out precision of the top candidates at or above it
    precision: float | None
    #: the share of held-out posts whose top candidate is at or above it
    coverage: float
    #: how many held-out top candidates are at or above it
    items: int
    #: why there is no tier (``None`` when there is one)
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"threshold": self.threshold, "precision": self.precision, "coverage": self.coverage,
                "items": self.items, "reason": self.reason}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Tier:
        return cls(raw.get("threshold"), raw.get("precision"), raw.get("coverage", 0.0),
                   raw.get("items", 0), raw.get("reason"))


def auto_tier(confidences: Sequence[float], right: Sequence[int], precision: float = PRECISION,
              min_items: int = MIN_ITEMS) -> Tier:
    """The lowest threshold whose set ``confidence >= threshold`` has ``precision`` (its Wilson
    lower bound) over at least ``min_items`` items (module docstring). Thresholds are the
    observed confidences."""
    n = len(confidences)
    if n < min_items:
        return Tier(None, None, 0.0, 0, f"{n} held-out posts; a tier needs at least {min_items} "
                                         f"above it")
    pairs = sorted(zip(confidences, right), key=lambda t: -t[0])
    best: tuple[float, float, int] | None = None
    hits = 0
    top_precision = None
    for i, (c, y) in enumerate(pairs, start=1):
        hits += y
        if i < n and pairs[i][0] == c:  # ties: a threshold takes all of them
            continue
        if i >= min_items:
            if top_precision is None:
                top_precision = (hits, i)
            if wilson_lower(hits, i) >= precision:
                best = (c, hits / i, i)
    if best is None:
        seen = (f"; the {top_precision[1]} most confident were right {top_precision[0] / top_precision[1]:.0%} "
                f"of the time (at least {wilson_lower(*top_precision):.0%} by the Wilson bound)") \
            if top_precision is not None else ""
        return Tier(None, None, 0.0, 0, f"no confidence reaches a held-out precision of "
                                         f"{precision:.0%} (the Wilson bound's) over {min_items} or more "
                                         f"posts{seen}")
    c, p, i = best
    return Tier(round(c, 4), round(p, 4), round(i / n, 4), i)
