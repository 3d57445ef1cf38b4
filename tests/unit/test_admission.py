"""Job quota and admission: the pure parts (the 429 a full quota raises, what the sweeper
releases). The Redis scripts run against the real Redis in tests/integration/test_quota.py."""
import json

import pytest

from plugin.service.admission import QUOTA_RETRY_AFTER_S, quota_exceeded, stale
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
