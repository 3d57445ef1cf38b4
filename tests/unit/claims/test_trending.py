"""When a claim trends, once per window (pure), and the tenant rule that asks for it."""
from __future__ import annotations

import pytest

from plugin.claims.records import Claim, Lead
from plugin.claims.trending import due, payload, window_start
from plugin.errors import BadInput
from plugin.review.rules import Rules

NOW = "2026-11-28T12:00:00.000+00:00"


def claim(trending_at: str | None = None) -> Claim:
    return Claim(id="c1", tenant="t", lead=Lead("p", "x", "en", NOW), post_count=5, first_seen=NOW, last_seen=NOW,
                 langs={"en": 5}, days={"2026-11-28": 5}, trending_at=trending_at)


def test_due_when_enough_posts_in_the_window_and_not_said_within_it():
    assert window_start(NOW, 2) == "2026-11-28T10:00:00.000+00:00"
    assert due(claim(), 3, 3, 1.0, NOW)
    assert not due(claim(), 2, 3, 1.0, NOW)
    assert not due(claim("2026-11-28T11:30:00.000+00:00"), 9, 3, 1.0, NOW)  # said in this window
    assert due(claim("2026-11-28T10:30:00.000+00:00"), 9, 3, 1.0, NOW)  # said in an earlier one


def test_payload_names_the_claim_its_spread_and_best_match():
    data = payload(claim(), 4, 1.0)
    assert data["claim"]["id"] == "c1" and data["posts_in_window"] == 4 and data["window_hours"] == 1.0
    assert data["best_match"] is None


def test_the_trending_rule_is_checked():
    rules = Rules.from_mapping({"tenants": {"t": {"trending_posts": 50, "trending_window_hours": 6}}})
    assert rules.for_tenant("t").trending_posts == 50 and rules.for_tenant("t").trending_window_hours == 6.0
    assert rules.for_tenant("other").trending_posts is None
    for bad in ({"trending_posts": 1}, {"trending_posts": 2.5}, {"trending_posts": True},
                {"trending_window_hours": 0}, {"trending_window_hours": "6"}):
        with pytest.raises(BadInput):
            Rules.from_mapping({"default": bad})
