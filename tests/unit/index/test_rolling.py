"""The rolling alias's pure rules (``plugin.index.rolling``): names, when to roll, what expires,
and the ISM policy's body."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from plugin.index import rolling
from plugin.index.templates import plain_index_bodies


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp() * 1000)


def test_names_and_generations():
    assert rolling.first_index("posts") == "posts-v1-000001"
    assert rolling.generation("posts", "posts-v1") == (1, 1)  # made before rolling
    assert rolling.generation("posts", "posts-v1-000012") == (1, 12)
    assert rolling.generation("posts", "posts-v2-000003") == (2, 3)
    assert rolling.generation("posts", "posts-x-v1-000001") is None
    assert rolling.generation("posts", "claims-v1") is None
    assert rolling.next_index("posts", "posts-v1") == "posts-v1-000002"
    assert rolling.next_index("posts", "posts-v1-000009") == "posts-v1-000010"
    with pytest.raises(ValueError):
        rolling.next_index("posts", "other-v1")


def test_newest_only_for_one_versions_generations():
    assert rolling.newest("posts", ["posts-v1", "posts-v1-000002", "posts-v1-000010"]) == "posts-v1-000010"
    assert rolling.newest("posts", ["posts-v1-000001", "posts-v2-000001"]) is None  # two versions
    assert rolling.newest("posts", ["posts-v1-000001", "elsewhere"]) is None
    assert rolling.newest("posts", []) is None


def test_rollover_is_due_in_a_later_calendar_month():
    assert not rolling.rollover_due(ms("2026-11-01T00:00:00"), ms("2026-11-30T23:59:59"))
    assert rolling.rollover_due(ms("2026-11-30T23:59:59"), ms("2026-12-01T00:00:00"))
    assert rolling.rollover_due(ms("2026-12-15T00:00:00"), ms("2027-01-02T00:00:00"))  # the year turns
    assert not rolling.rollover_due(ms("2027-01-02T00:00:00"), ms("2026-12-15T00:00:00"))


def test_an_index_expires_retention_days_after_it_stopped_taking_posts():
    created = {"posts-v1": ms("2025-01-10T00:00:00"), "posts-v1-000002": ms("2025-02-01T00:00:00"),
               "posts-v1-000003": ms("2025-03-01T00:00:00"), "posts-v1-000004": ms("2026-02-01T00:00:00")}
    write = "posts-v1-000004"
    # posts-v1 took posts until 2025-02-01: 365 days after that it goes, not before
    assert rolling.expired("posts", created, write, ms("2026-01-31T00:00:00"), 365) == []
    assert rolling.expired("posts", created, write, ms("2026-02-02T00:00:00"), 365) == ["posts-v1"]
    assert rolling.expired("posts", created, write, ms("2026-03-02T00:00:00"), 365) == ["posts-v1", "posts-v1-000002"]
    # the write index never expires, however old; 0 keeps everything
    assert "posts-v1-000004" not in rolling.expired("posts", created, write, ms("2040-01-01T00:00:00"), 1)
    assert rolling.expired("posts", created, write, ms("2040-01-01T00:00:00"), 0) == []


def test_the_ism_policy_rolls_monthly_and_deletes_after_the_retention():
    body = rolling.ism_policy("posts", 400)["policy"]
    hot, delete = body["states"]
    assert hot["actions"] == [{"rollover": {"min_index_age": "30d"}}]
    assert hot["transitions"] == [{"state_name": "delete", "conditions": {"min_rollover_age": "400d"}}]
    assert delete["actions"] == [{"delete": {}}]
    assert body["ism_template"][0]["index_patterns"] == ["posts-v*"]
    kept = rolling.ism_policy("posts", 0)["policy"]
    assert [s["name"] for s in kept["states"]] == ["hot"] and kept["states"][0]["transitions"] == []
    assert "never deleted" in kept["description"]


def test_the_posts_kind_starts_a_rolling_alias_and_the_others_do_not():
    _, _, first, create = plain_index_bodies("posts", "posts", 0, {"model": "m", "dimension": 4})
    assert first == "posts-v1-000001" and create == {"aliases": {"posts": {"is_write_index": True}}}
    _, _, first, create = plain_index_bodies("claims", "claims", 0)
    assert first == "claims-v1" and create == {"aliases": {"claims": {}}}
