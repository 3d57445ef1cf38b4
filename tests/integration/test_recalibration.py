"""A tenant's recalibrated confidence end to end, over the real OpenSearch, Redis and a worker:
decisions recorded through ``ReviewDesk.decide`` (synthetic review items whose true confidence
is known: ``plugin.learn.calibration_synthetic``), ``factsieve learn calibrate`` storing the
tenant's map, its matches then carrying it while another tenant's do not, a one-sided log
refused, and auto-confirmation for a tenant that opted in."""
from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

from plugin.learn.calibration_synthetic import record_through_desk, synthetic_decisions
from tests.conftest import ROOT
from tests.integration.conftest import (
    API_FACTCHECKS,
    Worker,
    cleanup_deployment,
    namespaced,
    settings_env,
    wait_for,
)

pytestmark = pytest.mark.integration

FIVE_G = "BREAKING: 5G masts are spreading the coronavirus!!"
#: tenant A's true map: the packaged confidence is too low for it (``TRUE_MAP`` is the other way)
A_TRUTH = (3.0, 2.0)


@pytest.fixture(scope="module")
def tenants():
    tag = uuid.uuid4().hex[:6]
    return {"a": f"ra-{tag}", "b": f"rb-{tag}", "c": f"rc-{tag}"}


@pytest.fixture(scope="module")
def deployment(settings, store, embedder, receiver, tenants, tmp_path_factory):
    """A deployment of its own whose review rules opt tenant A into auto-confirmation, with a
    worker and the API fixture fact-checks."""
    from api import create_app
    from plugin.ingest import Format, ingest, read_records
    from plugin.service.services import Services

    folder = tmp_path_factory.mktemp("recalibration")
    rules = folder / "rules.json"
    rules.write_text(json.dumps({"tenants": {tenants["a"]: {"auto_confirm": True}}}))
    s = namespaced(settings, uuid.uuid4().hex[:10], webhook_allowed_hosts=(receiver.origin,),
                   review_rules_path=str(rules), learn_cache_s=0.0)
    services = Services(s, store=store, embedder=embedder)
    services.factchecks.ensure()
    report = ingest(read_records([API_FACTCHECKS], Format.jsonl), store=store, embedder=embedder,
                    index=s.index)
    assert report.rejected == 0, report.rejects
    worker = Worker(s, folder / "worker.log")
    try:
        yield services, create_app(s, services=services).test_client()
    finally:
        worker.stop()
        cleanup_deployment(s, store)


def key(services, tenant: str) -> dict[str, str]:
    from plugin.service.keys import Scope

    return {"Authorization": f"Bearer {services.keys.create('ana', Scope.WRITE, tenant)[1]}"}


def calibrate(services, tenant: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli.main", "learn", "calibrate", "--tenant", tenant,
                           "--json"], check=False, cwd=ROOT, env=settings_env(services.settings),
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def fitted(deployment, tenants):
    """Tenant A recalibrated from 600 decisions by ``factsieve learn calibrate``."""
    services, _ = deployment
    # a desk whose top candidates are right often enough that 600 decisions prove a tier (its
    # Wilson bound); no not-a-claim posts, which count against the tier
    record_through_desk(services.review, tenants["a"],
                        synthetic_decisions(600, seed=1, true_map=A_TRUTH, not_a_claim=0.0))
    done = calibrate(services, tenants["a"])
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_calibrate_stores_the_tenants_model_with_its_held_out_numbers(deployment, tenants, fitted):
    services, _ = deployment
    assert fitted["tenant"] == tenants["a"] and fitted["stored"] is True
    assert fitted["decisions"] >= 280 and fitted["counts"]["held_out_decisions"] > 50
    assert fitted["ece_after"] < fitted["ece_before"]
    assert fitted["tier"]["threshold"] is not None and fitted["tier"]["precision"] >= 0.95
    assert fitted["calibrator"]["name"] == "factsieve"
    stored = services.recalibrations.get(tenants["a"])
    assert stored["tier"] == fitted["tier"] and stored["fitted_at"] == fitted["fitted_at"]
    assert services.recalibrations.get(tenants["b"]) is None


def test_the_tenants_matches_carry_its_confidence_and_another_tenants_do_not(deployment, tenants, fitted):
    from plugin.learn.calibrate import Recalibration

    services, client = deployment
    body = {"text": FIVE_G, "k": 3}
    a = client.post("/v1/match", json=body, headers=key(services, tenants["a"])).get_json()
    b = client.post("/v1/match", json=body, headers=key(services, tenants["b"])).get_json()
    assert [m["id"] for m in a["matches"]] == [m["id"] for m in b["matches"]]
    model = Recalibration.from_dict(services.recalibrations.get(tenants["a"])["params"])
    for i, (ma, mb) in enumerate(zip(a["matches"], b["matches"])):
        assert "confidence_packaged" not in mb
        assert ma["confidence_packaged"] == mb["confidence"]
        assert ma["confidence"] == round(model.predict(mb["confidence"], b["lang"], i == 0), 4)
    # (a top match at the packaged ceiling stays there: the map keeps the packaged range)
    assert any(ma["confidence"] != mb["confidence"] for ma, mb in zip(a["matches"], b["matches"]))


def test_one_sided_decisions_are_refused_and_nothing_is_stored(deployment, tenants):
    services, _ = deployment
    record_through_desk(services.review, tenants["c"], synthetic_decisions(60, seed=2, only="confirm"))
    done = calibrate(services, tenants["c"])
    assert done.returncode == 2 and done.stdout == ""
    assert "one-sided (60 confirms, 0 rejects" in done.stderr
    assert services.recalibrations.get(tenants["c"]) is None


def test_an_opted_in_tenant_above_its_tier_is_auto_confirmed_once(deployment, tenants, fitted, receiver):
    from plugin.service.handlers import run_post

    services, client = deployment
    ana = key(services, tenants["a"])
    path = f"/auto-{uuid.uuid4().hex[:8]}"
    assert client.post("/v1/webhooks", headers=ana, json={
        "url": receiver.url(path), "events": ["match.confirmed"]}).status_code == 201
    post = {"id": f"auto-{uuid.uuid4().hex[:8]}", "text": FIVE_G, "lang": "en"}
    assert client.post("/v1/posts", json=post, headers=ana).status_code == 202

    def confirmed() -> dict | None:  # the item moves first, its decision is appended after it
        i = client.get(f"/v1/review/{post['id']}", headers=ana).get_json()
        return i if i.get("status") == "confirmed" and i["decisions"] else None

    item = wait_for(confirmed, what="the auto-confirmation")
    assert item["decided_by"] == "factsieve-auto" and item["candidates"][0]["confidence"] >= fitted["tier"]["threshold"]
    (decision,) = item["decisions"]
    assert (decision["origin"], decision["action"], decision["factcheck_id"]) == ("auto", "confirm", "api-2")
    (got,) = wait_for(lambda: receiver.received(path), what="the match.confirmed webhook")
    data = json.loads(got["body"])["data"]
    assert data["auto"] is True and data["decision"]["origin"] == "auto"

    # the job run again (a redelivered message): it succeeds and decides nothing new
    again = run_post(services, {"id": "again", "tenant": tenants["a"], "input": {"post": post}}, lambda d: None)
    assert again["post_id"] == post["id"]
    assert [d.id for d in services.review.decisions_for(tenants["a"], post["id"])] == [decision["id"]]

    # an auto decision is undone like any other
    undo = client.post("/v1/review/decisions", headers=ana, json={"post_id": post["id"], "action": "undo"})
    assert undo.status_code == 201, undo.data


def test_the_schedule_refits_a_tenant_once_enough_new_decisions_arrived(deployment, tenants):
    from plugin.learn.calibration_store import due_tenants, refit_due
    services, _ = deployment
    d = f"rd-{uuid.uuid4().hex[:6]}"
    record_through_desk(services.review, d, synthetic_decisions(120, seed=4, true_map=A_TRUTH))
    assert (d, 120) in due_tenants(services.review, services.recalibrations, 100)
    parts = (services.review, services.recalibrations, services.kv, services.settings)
    out = refit_due(*parts)
    assert out["refitted"] == [d] and out["refused"] == []  # C's refusal by the command was noted
    assert services.recalibrations.get(d)["counts"]["decisions"] <= 120
    assert refit_due(*parts)["locked"] is True  # one check a period, across workers
    due = [t for t, _ in due_tenants(services.review, services.recalibrations, 1)]
    assert d not in due and tenants["c"] not in due  # nothing new since the fit or the refusal
