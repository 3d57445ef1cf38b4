"""FactSieve against a secured OpenSearch (issue 11, point 5), as production runs it.

The node is the one `scripts/services.sh up --secure` starts (`make test` does): the security
plugin, TLS on HTTP and transport with a local CA, and FactSieve's two identities from
``index_templates/security/``: ``factsieve_admin`` installs (``factsieve init``), the runtime
identity ``factsieve_runtime`` (or the client certificate with CN ``factsieve-runtime``) only
reads and writes documents of FactSieve's indexes. Its settings are in the file the script
writes (``FACTSIEVE_TEST_SECURE_ENV``, default ``.cache/opensearch/secure/secure.env``).
"""
from __future__ import annotations

import json
import logging
import os
import uuid
from pathlib import Path

import pytest
from pydantic import SecretStr

from plugin.errors import BackendError
from plugin.settings import Settings
from plugin.search.result import Match
from tests.conftest import ROOT
from tests.integration.conftest import API_FACTCHECKS, cleanup_deployment, namespaced, problem_of

pytestmark = pytest.mark.integration

SECURE_ENV = Path(os.environ.get("FACTSIEVE_TEST_SECURE_ENV")
                  or ROOT / ".cache" / "opensearch" / "secure" / "secure.env")


@pytest.fixture(scope="module")
def secure_env() -> dict[str, str]:
    if not SECURE_ENV.exists():
        pytest.fail(f"no secured OpenSearch settings at {SECURE_ENV}: run `scripts/services.sh up "
                    "--secure` (`make test` starts it)", pytrace=False)
    pairs = (line.split("=", 1) for line in SECURE_ENV.read_text().splitlines()
             if "=" in line and not line.startswith("#"))
    return {k: v for k, v in pairs}


@pytest.fixture(scope="module")
def secured(settings, secure_env) -> Settings:
    """The runtime identity, the admin identity beside it, and the test's own namespace."""
    base = settings.model_copy(update={
        "opensearch_url": secure_env["FACTSIEVE_OPENSEARCH_URL"],
        "opensearch_ca_certs": Path(secure_env["FACTSIEVE_OPENSEARCH_CA_CERTS"]),
        "opensearch_user": secure_env["FACTSIEVE_OPENSEARCH_USER"],
        "opensearch_password": SecretStr(secure_env["FACTSIEVE_OPENSEARCH_PASSWORD"]),
        "opensearch_admin_user": secure_env["FACTSIEVE_OPENSEARCH_ADMIN_USER"],
        "opensearch_admin_password": SecretStr(secure_env["FACTSIEVE_OPENSEARCH_ADMIN_PASSWORD"]),
        "opensearch_timeout_s": 10.0, "host_model": False})
    return namespaced(base, f"sec{uuid.uuid4().hex[:8]}")


def runtime_only(settings: Settings, **update) -> Settings:
    return settings.model_copy(update={"opensearch_admin_user": None,
                                       "opensearch_admin_password": None, **update})


@pytest.fixture(scope="module")
def services(secured, embedder):
    """Installed once with the admin identity (as `factsieve init` does), then used as runtime."""
    from plugin.index.store import Store
    from plugin.service.services import Services

    svc = Services(secured, embedder=embedder)
    yield svc
    cleanup_deployment(secured, Store(secured.as_opensearch_admin()))


@pytest.fixture(scope="module")
def installed(services):
    return services.admin().deployment.install()


def test_tls_needs_the_ca_bundle(secured):
    from plugin.index.store import Store

    untrusted = Store(secured.model_copy(update={"opensearch_ca_certs": None}))
    with pytest.raises(BackendError, match="FACTSIEVE_OPENSEARCH_CA_CERTS") as err:
        untrusted.info()
    assert "certificate verify failed" in str(err.value)
    assert Store(secured).info()["version"]["number"] == "2.19.1"


def test_plain_http_to_the_tls_port_is_named(secured):
    from plugin.index.store import Store

    plain = Store(secured.model_copy(update={
        "opensearch_url": secured.opensearch_url.replace("https://", "http://")}))
    with pytest.raises(Exception) as err:  # noqa: PT011 - the node closes the connection
        plain.info()
    assert secured.opensearch_password.get_secret_value() not in str(err.value)


def test_unverified_tls_works_and_says_so(secured, caplog):
    from plugin.index.store import Store

    with caplog.at_level(logging.WARNING, logger="plugin.index.store"):
        store = Store(secured.model_copy(update={"opensearch_ca_certs": None,
                                                 "opensearch_verify_certs": False}))
    assert store.ping()
    assert "not checked" in caplog.text


def test_a_wrong_password_is_named_never_shown(secured):
    from plugin.index.store import Store

    wrong = Store(secured.model_copy(update={"opensearch_password": SecretStr("not-the-password")}))
    with pytest.raises(BackendError, match="did not accept FactSieve's identity") as err:
        wrong.info()
    assert "not-the-password" not in str(err.value)
    assert not wrong.ping()


def test_the_runtime_identity_cannot_install(secured, embedder):
    from plugin.service.services import Services

    runtime = Services(runtime_only(secured, index=f"{secured.index}-x"), embedder=embedder)
    with pytest.raises(BackendError, match="FACTSIEVE_OPENSEARCH_ADMIN_USER") as err:
        runtime.admin().deployment.install()
    message = str(err.value)
    assert "no permissions for [cluster:admin/component_template/put]" in message
    assert secured.opensearch_user not in message  # the plugin names the user; we do not


def test_init_with_the_admin_identity_installs_everything(installed, services, secured):
    admin = services.admin().store
    assert installed["index"] == f"{secured.index}-v1"
    assert installed["evidence_index"] == f"{secured.evidence_index}-v1"
    assert admin.alias_indices(secured.jobs_index) == [f"{secured.jobs_index}-v1"]
    assert installed["review_index"] == secured.review_index
    for alias in (secured.review_index, secured.decisions_index):
        assert admin.alias_indices(alias) == [f"{alias}-v1"]
    # the posts alias rolls by month (plugin.index.rolling): its first index, marked for writes
    assert admin.alias_indices(secured.posts_index) == [f"{secured.posts_index}-v1-000001"]
    assert admin.write_index(secured.posts_index) == f"{secured.posts_index}-v1-000001"
    assert installed["search_pipelines"], "neural-search is on the secured node too"
    assert services.admin().deployment.install()["index"] == installed["index"]  # idempotent


def test_the_runtime_identity_ingests_matches_and_finishes_jobs(installed, secured, embedder):
    from plugin.ingest import Format, read_records
    from plugin.search.matcher import MatchRequest
    from plugin.search.versions import versions_of
    from plugin.service.jobs import JobKind
    from plugin.service.services import Services

    runtime = Services(runtime_only(secured), embedder=embedder)
    report = runtime.factchecks.ingest(read_records([API_FACTCHECKS], Format.jsonl))
    assert report.indexed + report.updated > 0 and report.rejected == 0
    runtime.store.refresh(secured.index)
    result = runtime.matcher().match(MatchRequest(text="5G masts spread the coronavirus", k=3))
    assert result.matches, "the runtime identity searches the alias"

    job, _ = runtime.jobs.create(JobKind.VERIFY, {"claim": "x"})
    runtime.jobs.finish(job["id"], {"ok": True})
    assert runtime.store.get(secured.jobs_index, job["id"])["status"] == "succeeded"

    # the review queue and the decision log: conditional item writes and log appends
    runtime.review.record_item("default", "p-secured", "5G masts spread the coronavirus", "en", None,
                               None, Match.of(result, versions_of(runtime.matcher(), result)))
    (decision,) = runtime.review.decide("default", "ana", [{"post_id": "p-secured", "action": "confirm"}])
    assert runtime.review.item("default", "p-secured").decisions == (decision,)

    with pytest.raises(BackendError, match="refused"):
        runtime.store.delete_index(installed["index"])
    with pytest.raises(BackendError, match="refused"):
        runtime.store.put_search_pipeline("fs-test-not-allowed", {"response_processors": []})


def test_the_runtime_client_certificate(installed, secured, secure_env, embedder):
    """The runtime identity by certificate alone: no password travels."""
    from plugin.search.matcher import MatchRequest
    from plugin.service.services import Services

    by_cert = runtime_only(secured, opensearch_user=None, opensearch_password=None,
                           opensearch_client_cert=Path(secure_env["FACTSIEVE_SECURE_CLIENT_CERT"]),
                           opensearch_client_key=Path(secure_env["FACTSIEVE_SECURE_CLIENT_KEY"]))
    svc = Services(by_cert, embedder=embedder)
    who = svc.store.request("authinfo", "GET", "/_plugins/_security/authinfo")
    assert who["user_name"] == "factsieve-runtime" and who["roles"] == ["factsieve_runtime"]
    svc.factchecks.ensure()  # reads the alias and the model, writes nothing
    assert svc.matcher().match(MatchRequest(text="5G masts spread the coronavirus", k=3)).matches
    with pytest.raises(BackendError, match="refused"):
        svc.store.put_index_template("fs-test-not-allowed", {"index_patterns": ["fs-test-na*"]})


def test_the_api_runs_on_the_runtime_identity(installed, secured, embedder):
    from api import create_app
    from plugin.service.keys import Scope
    from plugin.service.services import Services

    svc = Services(runtime_only(secured), embedder=embedder)
    client = create_app(svc.settings, services=svc).test_client()
    _, key = svc.keys.create("secured", Scope.WRITE)
    auth = {"Authorization": f"Bearer {key}"}
    assert client.get("/readyz").status_code == 200
    body = {"id": "sec-1", "claim": "Drinking bleach cures COVID-19", "url": "https://example.org/fc/sec-1",
            "lang": "en", "rating": "False", "date": "2020-04-01"}
    resp = client.post("/v1/fact-checks", json=[body], headers=auth)
    assert resp.status_code == 200, resp.get_json()
    svc.store.refresh(secured.index)
    resp = client.post("/v1/match", json={"text": "bleach cures covid", "k": 3}, headers=auth)
    assert resp.status_code == 200 and resp.get_json()["matches"][0]["id"] == "sec-1"


def test_the_api_hides_a_refusal_s_details(installed, secured, embedder):
    """A backend refusal is a 502 naming what failed, never the address or the credentials."""
    from api import create_app
    from plugin.service.keys import Scope
    from plugin.service.services import Services

    settings = runtime_only(secured, opensearch_password=SecretStr("wrong-password-xyz"))
    svc = Services(settings, embedder=embedder)
    client = create_app(settings, services=svc).test_client()
    _, key = svc.keys.create("secured", Scope.READ)
    resp = client.post("/v1/match", json={"text": "bleach cures covid"},
                       headers={"Authorization": f"Bearer {key}"})
    body = problem_of(resp)
    assert resp.status_code == 502
    raw = json.dumps(body)
    assert "wrong-password-xyz" not in raw and "127.0.0.1" not in raw and "9250" not in raw


def test_status_shows_the_redacted_url(secured, capsys, monkeypatch):
    from cli.main import main

    monkeypatch.setenv("FACTSIEVE_OPENSEARCH_URL", secured.opensearch_url)
    monkeypatch.setenv("FACTSIEVE_OPENSEARCH_CA_CERTS", str(secured.opensearch_ca_certs))
    monkeypatch.setenv("FACTSIEVE_OPENSEARCH_USER", secured.opensearch_user)
    monkeypatch.setenv("FACTSIEVE_OPENSEARCH_PASSWORD", secured.opensearch_password.get_secret_value())
    assert main(["status"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["opensearch"] is True and "opensearch-security" in out["plugins"]
    assert secured.opensearch_password.get_secret_value() not in json.dumps(out)
