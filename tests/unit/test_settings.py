"""The API/worker settings read from FACTSIEVE_* variables."""
import re

import pytest
from pydantic import ValidationError

from plugin.errors import BadInput
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


# -- the settings file `make up` writes (.factsieve.env) --------------------------------------------
def write_env_file(path, **values):
    path.write_text("# written by a test\n" + "".join(f"FACTSIEVE_{k.upper()}={v}\n" for k, v in values.items())
                    + "NOT_OURS=1\n", encoding="utf-8")
    return path


def test_the_settings_file_in_the_working_directory_is_read(tmp_path, monkeypatch):
    write_env_file(tmp_path / ".factsieve.env", llm_url="http://127.0.0.1:8089/v1",
                   redis_url="redis://127.0.0.1:6390/0")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FACTSIEVE_ENV_FILE")  # the tests' conftest disables it
    monkeypatch.delenv("FACTSIEVE_LLM_URL", raising=False)
    monkeypatch.delenv("FACTSIEVE_REDIS_URL", raising=False)
    s = Settings()
    assert s.llm_url == "http://127.0.0.1:8089/v1" and s.redis_url == "redis://127.0.0.1:6390/0"


def test_environment_variables_win_over_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("FACTSIEVE_ENV_FILE", str(write_env_file(tmp_path / "a.env", llm_url="http://file/v1",
                                                                redis_url="redis://file:1/0")))
    monkeypatch.setenv("FACTSIEVE_LLM_URL", "http://env/v1")
    monkeypatch.delenv("FACTSIEVE_REDIS_URL", raising=False)
    s = Settings()
    assert s.llm_url == "http://env/v1" and s.redis_url == "redis://file:1/0"
    assert Settings(llm_url="http://kwarg/v1").llm_url == "http://kwarg/v1"  # arguments win over both


def test_the_file_is_read_at_construction_not_at_import(tmp_path, monkeypatch):
    monkeypatch.delenv("FACTSIEVE_LLM_URL", raising=False)
    path = tmp_path / "late.env"
    monkeypatch.setenv("FACTSIEVE_ENV_FILE", str(path))
    with pytest.raises(BadInput, match="late.env"):  # named explicitly, it must exist
        Settings()
    write_env_file(path, llm_url="http://late/v1")
    assert Settings().llm_url == "http://late/v1"


def test_an_empty_name_or_no_file_reads_none(tmp_path, monkeypatch):
    write_env_file(tmp_path / ".factsieve.env", llm_url="http://file/v1")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FACTSIEVE_LLM_URL", raising=False)
    monkeypatch.setenv("FACTSIEVE_ENV_FILE", "")
    assert Settings().llm_url is None
    monkeypatch.delenv("FACTSIEVE_ENV_FILE")
    assert Settings(_env_file=None).llm_url is None
    (tmp_path / ".factsieve.env").unlink()
    assert Settings().llm_url is None  # no file in the working directory: the defaults


def test_what_make_up_writes_are_settings():
    from tests.conftest import ROOT

    script = (ROOT / "scripts" / "services.sh").read_text(encoding="utf-8")
    written = re.findall(r"^FACTSIEVE_([A-Z_]+)=", script.split("write_env_file() {")[1].split("\n}")[0], re.M)
    assert written == ["OPENSEARCH_URL", "REDIS_URL", "LLM_URL", "NLTK_DATA_DIR"]
    assert {w.lower() for w in written} <= set(Settings.model_fields)
