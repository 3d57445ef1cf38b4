"""Job quota and admission: the pure parts (the 429 a full quota raises, a job's broker priority, what the sweeper
releases). The Redis scripts run against the real Redis in tests/integration/test_quota.py."""
import json

import pytest

from plugin.service.admission import (
    FIRST,
    LAST,
    PRIORITY_STEPS,
    QUOTA_RETRY_AFTER_S,
    dispatch_priority,
    quota_exceeded,
    stale,
)
from plugin.settings import Settings


def test_quota_error_names_the_cap_and_the_setting():
    err = quota_exceeded("newsroom-a", 3)
    assert err.status == 429 and err.limit == 3 and err.retry_after == QUOTA_RETRY_AFTER_S > 0
    assert "'newsroom-a'" in err.detail and "3 jobs queued or running" in err.detail
    assert "FACTSIEVE_TENANT_MAX_ACTIVE_JOBS (3)" in err.detail


FINISHED = ("succeeded", "failed")


@pytest.mark.parametrize("raws, expected", [
    ([None], ["a"]),                                            # record gone: release
    ([json.dumps({"status": "succeeded"})], ["a"]),             # ended, never released
    ([json.dumps({"status": "failed"})], ["a"]),
    ([json.dumps({"status": "queued"})], []),                   # still live: keep
    ([json.dumps({"status": "running"})], []),
])
def test_stale_ids_are_the_gone_and_the_finished(raws, expected):
    assert stale(["a"], raws, FINISHED) == expected


def test_stale_keeps_order_over_several():
    raws = [None, json.dumps({"status": "running"}), json.dumps({"status": "failed"})]
    assert stale(["x", "y", "z"], raws, FINISHED) == ["x", "z"]


def test_quota_settings_defaults_and_bounds(monkeypatch):
    s = Settings()
    assert (s.tenant_max_active_jobs, s.tenant_max_dispatched_jobs) == (200, 4)
    assert (s.unauthenticated_rate_limit_requests, s.trust_x_forwarded_for) == (60, False)
    monkeypatch.setenv("FACTSIEVE_TENANT_MAX_ACTIVE_JOBS", "0")
    with pytest.raises(ValueError):
        Settings()


@pytest.mark.parametrize("active, slots, expected", [
    (0, 1, 1), (1, 1, 1),                  # the whole load fits the slots: first after FIRST
    (2, 1, 2), (3, 1, 3), (4, 1, 3),       # each doubling of the load one step later
    (5, 1, 4), (8, 1, 4), (9, 1, 5), (16, 1, 5), (17, 1, 6), (32, 1, 6),
    (33, 1, 7), (40, 1, 7), (64, 1, 7), (65, 1, 8), (128, 1, 8), (129, 1, 9),
    (10**6, 1, 9),                         # never past LAST
    (4, 4, 1), (5, 4, 2), (8, 4, 2), (9, 4, 3), (200, 4, 7),  # relative to the slots
    (3, 0, 3),                             # no slots reads as one
])
def test_dispatch_priority_table(active, slots, expected):
    assert dispatch_priority(active, slots) == expected


def test_dispatch_priority_orders_tenants_by_load_and_leaves_first_to_unprioritized_messages():
    """A lighter tenant is never served after a heavier one (Redis: lower number first), and no
    job shares FIRST with webhook deliveries and aged resends."""
    levels = [dispatch_priority(n, 2) for n in range(2000)]
    assert levels == sorted(levels)
    assert set(levels) <= set(PRIORITY_STEPS) - {FIRST} and max(levels) == LAST
    assert PRIORITY_STEPS == tuple(range(10)) and FIRST == 0
