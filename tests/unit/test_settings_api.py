"""The API/worker settings read from FACTSIEVE_* variables."""
from plugin.settings import Settings


def test_webhook_allowed_hosts_is_comma_separated(monkeypatch):
    monkeypatch.setenv("FACTSIEVE_WEBHOOK_ALLOWED_HOSTS", " 127.0.0.1, Hooks.Internal ,,")
    assert Settings().webhook_allowed_hosts == ("127.0.0.1", "hooks.internal")
    monkeypatch.setenv("FACTSIEVE_WEBHOOK_ALLOWED_HOSTS", "")
    assert Settings().webhook_allowed_hosts == ()


def test_defaults_are_safe():
    s = Settings(_env_file=None)
    assert s.webhook_allowed_hosts == () and s.task_time_limit_s < s.broker_visibility_timeout_s
    assert s.webhook_backoff_max_s < s.broker_visibility_timeout_s
