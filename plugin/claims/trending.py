"""Spread alerts: when a claim is trending, and that it is said once per window (pure).

A claim trends when it gained at least ``posts`` posts within the last ``window_hours`` (counted
in the posts index: the posts whose ``created_at`` is in the window). The alert
(``claim.trending``) goes once per claim and window: the claim records when it was last sent
(``trending_at``), and another is due only once that is older than the window. Marking the claim
is a write over the version read, so two workers counting the same claim's posts send one alert.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from plugin.claims.records import Claim


def window_start(now: str, window_hours: float) -> str:
    """The ISO time ``window_hours`` before ``now``."""
    return (datetime.fromisoformat(now) - timedelta(hours=window_hours)).isoformat(timespec="milliseconds")


def due(claim: Claim, posts_in_window: int, posts: int, window_hours: float, now: str) -> bool:
    """Whether ``claim`` is trending and no alert went for it within the window."""
    if posts_in_window < posts:
        return False
    return claim.trending_at is None or claim.trending_at < window_start(now, window_hours)


def payload(claim: Claim, posts_in_window: int, window_hours: float) -> dict[str, Any]:
    """``claim.trending``'s data: the claim (its counts, sparkline and best match) and the spread."""
    shown = claim.to_dict()
    return {"claim": shown, "posts_in_window": posts_in_window, "window_hours": window_hours,
            "best_match": shown["fact_check"]}
