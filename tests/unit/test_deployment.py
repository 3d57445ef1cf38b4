"""docker-compose.yml and the Dockerfile agree with the code: every `factsieve` command parses
with the real CLI parser, every FACTSIEVE_* variable is a settings field, every long-running
service has a health check. (Docker itself cannot run here; this keeps the file honest.)"""
import re
import shlex

import pytest
import yaml

from cli.main import build_parser
from plugin.settings import Settings
from tests.conftest import ROOT

COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
FIELDS = {f"FACTSIEVE_{name.upper()}" for name in Settings.model_fields}


def _env_names(env) -> set[str]:
    if isinstance(env, dict):
        return set(env)
    return {item.split("=", 1)[0] for item in env or []}


def test_services_and_images():
    assert set(SERVICES) == {"opensearch", "redis", "init", "api", "worker"}
    assert SERVICES["opensearch"]["image"] == "opensearchproject/opensearch:2.19.1"
    assert SERVICES["init"]["build"] == "."
    assert {SERVICES[s]["image"] for s in ("init", "api", "worker")} == {"factsieve:local"}


@pytest.mark.parametrize("service", ["init", "api", "worker"])
def test_commands_parse_with_the_cli(service):
    command = SERVICES[service]["command"]
    assert command[0] == "factsieve"
    build_parser().parse_args(command[1:])  # exits (fails the test) on an unknown command or flag


def test_dockerfile_cmd_parses():
    text = (ROOT / "Dockerfile").read_text()
    cmd = re.search(r'^CMD (\[.*\])$', text, re.M).group(1)
    argv = yaml.safe_load(cmd)
    assert argv[0] == "factsieve"
    build_parser().parse_args(argv[1:])
    lines = re.findall(r"^RUN factsieve (.+)$", text, re.M)
    assert lines, "the image builds its model with `factsieve model build`"
    for line in lines:
        build_parser().parse_args(shlex.split(line))


def test_factsieve_env_names_are_settings():
    used = set()
    for service in SERVICES.values():
        used |= {n for n in _env_names(service.get("environment")) if n.startswith("FACTSIEVE_")}
    used |= set(re.findall(r"\b(FACTSIEVE_[A-Z_]+)=", (ROOT / "Dockerfile").read_text()))
    assert used, "no FACTSIEVE_* variables found"
    assert used <= FIELDS, used - FIELDS
    env = SERVICES["api"]["environment"]
    assert env["FACTSIEVE_OPENSEARCH_URL"] == "http://opensearch:9200"
    # the password comes from the environment, never a default in the file
    assert env["FACTSIEVE_REDIS_URL"] == "redis://:${REDIS_PASSWORD:?set REDIS_PASSWORD}@redis:6379/0"
    redis_cmd = SERVICES["redis"]["command"]
    assert "noeviction" in redis_cmd and redis_cmd[redis_cmd.index("--appendonly") + 1] == "yes"


def test_health_checks_dependencies_and_volumes():
    for name in ("opensearch", "redis", "api", "worker"):
        assert SERVICES[name]["healthcheck"]["test"], name
    assert "workers.main" in SERVICES["worker"]["healthcheck"]["test"][1]
    assert SERVICES["api"]["depends_on"]["init"]["condition"] == "service_completed_successfully"
    assert SERVICES["init"]["depends_on"]["opensearch"]["condition"] == "service_healthy"
    declared = set(COMPOSE["volumes"])
    for service in SERVICES.values():
        for volume in service.get("volumes", []):
            assert volume.split(":", 1)[0] in declared
    assert "--appendonly" in SERVICES["redis"]["command"]


def test_worker_entry_module_imports():
    import workers.main

    assert workers.main.app.main == "factsieve"
