"""The API/worker settings read from FACTSIEVE_* variables."""
import pytest
from pydantic import ValidationError

from plugin.settings import Settings


def test_webhook_allowed_hosts_are_comma_separated_origins(monkeypatch):
    monkeypatch.setenv("FACTSIEVE_WEBHOOK_ALLOWED_HOSTS",
                       " http://127.0.0.1:8080, HTTPS://Hooks.Internal ,,http://[::1]:81/,http://127.0.0.1:8080")
    assert Settings().webhook_allowed_hosts == ("http://127.0.0.1:8080", "https://hooks.internal:443",
                                                "http://[::1]:81")
    monkeypatch.setenv("FACTSIEVE_WEBHOOK_ALLOWED_HOSTS", "")
    assert Settings().webhook_allowed_hosts == ()


@pytest.mark.parametrize("value, message", [
    ("127.0.0.1", "write scheme://host:port, e.g. http://127.0.0.1:8080"),   # a bare host: every port, once
    ("http://127.0.0.1:8080,hooks.internal", "'hooks.internal' is not an origin"),
    ("http://hooks.internal:8080/hook", "path or query"),
    ("http://hooks.internal:0", "port '0'"),
])
def test_webhook_allowed_hosts_refuses_what_is_not_an_origin_at_start_up(monkeypatch, value, message):
    monkeypatch.setenv("FACTSIEVE_WEBHOOK_ALLOWED_HOSTS", value)
    with pytest.raises(ValidationError, match=message):
        Settings()


def test_defaults_are_safe():
    s = Settings(_env_file=None)
    assert s.webhook_allowed_hosts == () and s.task_time_limit_s < s.broker_visibility_timeout_s
    assert s.webhook_backoff_max_s < s.broker_visibility_timeout_s
