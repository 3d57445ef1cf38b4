"""Verification against the real parts: the local LLM server (SmolLM2-135M through llama.cpp's
OpenAI-compatible API), OpenSearch (evidence and fact-check indexes), Redis and a Celery worker.

A 135M model is a floor, not a fact-checker: these tests assert structure, flow and error
handling — the loop's early stop, the claim-date filter, the exclusion of the claim's own
fact-check, malformed output, an unreachable LLM, the time budget, the signed webhook — never
that a verdict is right.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from datetime import date

import pytest

from plugin.errors import LLMOutputInvalid, LLMUnavailable
from plugin.service.keys import Scope
from plugin.verify.config import verification_config
from plugin.verify.steps import LABELS
from plugin.verify.verifier import VerifyRequest
from tests.integration.conftest import Worker, closed_port, namespaced, poll_job, wait_for

pytestmark = pytest.mark.integration

CLAIM = "5G masts spread the coronavirus."
CLAIM_DAY = date(2020, 6, 1)
OWN_FACT_CHECK = "https://factcheck.example.org/5g-coronavirus"
LATER = "https://news.example.com/2020/07/5g-covid-study"
DOCS = [
    {"url": "https://health.example.org/covid-spread", "title": "How the coronavirus spreads",
     "text": "The coronavirus spreads between people through respiratory droplets and aerosols. "
             "Radio waves such as those used by 5G networks cannot carry a virus.",
     "published_at": "2020-04-02"},
    {"url": "https://telecom.example.com/5g-explained", "title": "What is 5G",
     "text": "5G is the fifth generation of mobile networks. Its masts send radio signals.",
     "published_at": "2019-11-20"},
    {"url": OWN_FACT_CHECK, "title": "Fact check: 5G does not spread the coronavirus",
     "text": "False: 5G masts do not spread the coronavirus. Viruses cannot travel on radio waves.",
     "published_at": "2020-05-10"},
    {"url": LATER, "title": "Study: 5G masts and the coronavirus",
     "text": "A study published in July 2020 found 5G masts do not spread the coronavirus.",
     "published_at": "2020-07-15"},
]


@pytest.fixture(scope="session")
def evidence_alias(api_services):
    from plugin.evidence import ensure_evidence_index, ingest_evidence, parse

    svc = api_services
    ensure_evidence_index(svc.store, svc.settings, svc.embedder)
    report = ingest_evidence(parse([json.dumps(d) for d in DOCS], "docs"), store=svc.store,
                             embedder=svc.embedder, index=svc.settings.evidence_index)
    assert report.rejected == 0, report.rejects
    return svc.settings.evidence_index


def config(name: str, **changes):
    """A packaged configuration, smaller for a 2-core test run (no few-shot, short answers);
    ``lookup_min_score=None`` turns the lookup off (its confidence threshold too)."""
    if "lookup_min_score" in changes and changes["lookup_min_score"] is None:
        changes.setdefault("lookup_min_confidence", None)
    return verification_config(name).model_copy(update={"fewshot": 0, "max_tokens": 200, **changes})


def verify(api_services, req: VerifyRequest, cfg):
    return api_services.verification.verifier(cfg, "default").verify(req, cfg).to_dict()


def check_shape(out: dict, cfg_name: str) -> None:
    assert {"claim", "date", "config", "verdict", "label_scores", "justification", "qa_pairs",
            "citations", "stage", "stopped_because", "timings_ms", "tokens", "budget_s"} <= set(out)
    assert out["config"] == cfg_name and out["verdict"] in LABELS
    assert set(out["label_scores"]) == set(LABELS)
    assert out["tokens"]["prompt"] > 0 and out["tokens"]["completion"] > 0
    for p in out["qa_pairs"]:
        assert set(p) == {"question", "answer", "source_url", "passage_id"}
    for st in out["statements"]:  # every statement shown cites an existing pair
        assert st["sources"] and all(1 <= n <= len(out["qa_pairs"]) for n in st["sources"])


def test_qa_loop_stops_early_once_decisive(api_services, evidence_alias, api_corpus):
    out = verify(api_services, VerifyRequest(claim=CLAIM, date=CLAIM_DAY, exclude_urls=(OWN_FACT_CHECK,)),
                 # a budget no loaded machine runs out of: this is about stopping when decisive
                 config("qa-loop", decisive_at=0.0, max_turns=3, lookup_min_score=None, budget_s=3600))
    check_shape(out, "qa-loop")
    assert out["stage"] == "qa-loop" and out["stopped_because"] == "decisive"
    assert len(out["qa_pairs"]) == 1  # decisive after the first turn, of three allowed
    assert {"question", "hyde", "retrieve", "answer", "summary", "verdict"} <= set(out["timings_ms"])


def test_evidence_after_the_claim_date_and_the_own_fact_check_are_never_used(
        api_services, evidence_alias, api_corpus):
    from plugin.evidence import EvidenceQuery

    retriever = api_services.evidence.retriever()
    q = EvidenceQuery(text="5G masts coronavirus study", before=CLAIM_DAY, exclude_urls=(OWN_FACT_CHECK,), k=10)
    urls = {p["url"] for p in retriever.search(q).passages}
    assert urls and LATER not in urls and OWN_FACT_CHECK not in urls
    assert LATER in {p["url"] for p in retriever.search(EvidenceQuery(text=q.text, k=10)).passages}
    out = verify(api_services, VerifyRequest(claim=CLAIM, date=CLAIM_DAY, exclude_urls=(OWN_FACT_CHECK,)),
                 config("single-call", lookup_min_score=None, passages=3, max_pairs=3,
                        max_tokens=1024))  # 3 pairs and 3 statements of <= 200 chars fit, digits and all
    check_shape(out, "single-call")
    used = {p["source_url"] for p in out["qa_pairs"]} | {c["url"] for c in out["citations"]}
    assert LATER not in used and OWN_FACT_CHECK not in used


def test_budget_exhausted_still_gives_a_verdict(api_services, evidence_alias, api_corpus):
    out = verify(api_services, VerifyRequest(claim=CLAIM, date=CLAIM_DAY, budget_s=0.001),
                 config("qa-loop", lookup_min_score=None))
    assert out["stopped_because"] == "budget" and out["qa_pairs"] == [] and out["budget_s"] == 0.001
    assert out["verdict"] in LABELS


def test_malformed_verdict_output_falls_back_with_the_raw_answer(api_services, evidence_alias, api_corpus):
    """16 tokens cannot hold the verdict's JSON: after the client's one retry the verdict is the
    head's (or Not Enough Evidence without one), never the LLM's, and the reason quotes the answer."""
    out = verify(api_services, VerifyRequest(claim=CLAIM, gold_qa=(
        {"question": "Do 5G masts spread viruses?", "answer": "No.", "source_url": None,
         "passage_id": None},)), config("qa-loop", max_tokens=16))
    assert out["verdict_source"] in ("head", "none") and out["verdict"] in LABELS
    assert "invalid LLM output after one retry" in out["fallback_reason"]
    assert "the answer began" in out["fallback_reason"]
    if out["verdict_source"] == "none":
        assert out["verdict"] == "Not Enough Evidence" and "no verdict head" in out["fallback_reason"]


def test_a_malformed_question_still_fails_with_the_raw_answer(api_services, evidence_alias, api_corpus):
    """Only the verdict step falls back: an invalid answer to an evidence step fails the claim."""
    with pytest.raises(LLMOutputInvalid) as err:
        verify(api_services, VerifyRequest(claim=CLAIM, date=CLAIM_DAY),
               config("qa-loop", lookup_min_score=None, max_tokens=4))
    assert err.value.raw and err.value.raw[:3] in str(err.value)


def test_llm_down_is_a_clear_error(api_services, evidence_alias, api_corpus):
    from plugin.service.services import Services

    down = Services(api_services.settings.model_copy(
        update={"llm_url": f"http://127.0.0.1:{closed_port()}/v1"}), store=api_services.store,
        embedder=api_services.embedder)
    cfg = config("qa-loop", lookup_min_score=None)
    with pytest.raises(LLMUnavailable, match="127.0.0.1"):
        down.verification.verifier(cfg, "default").verify(VerifyRequest(claim=CLAIM, date=CLAIM_DAY), cfg)


def test_lookup_answers_a_previously_fact_checked_claim(api_services, api_corpus):
    out = verify(api_services, VerifyRequest(claim="The Great Wall of China can be seen from the moon"),
                 verification_config("lookup"))
    assert out["stage"] == "previously-fact-checked" and out["verdict"] == "Refuted"
    assert out["citations"][0]["url"] == "https://checks.example.org/great-wall-moon"
    assert out["tokens"]["prompt"] == 0  # no LLM for a published answer


def expected_signature(secret: str, timestamp: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


def test_verify_job_reports_progress_and_delivers_claim_verified_signed(
        client, auth, worker, receiver, evidence_alias):
    path = f"/verified-{uuid.uuid4().hex[:8]}"
    sub = client.post("/v1/webhooks", headers=auth,
                      json={"url": receiver.url(path), "events": ["claim.verified"]}).get_json()
    try:
        resp = client.post("/v1/verify", headers=auth, json={
            "claim": CLAIM, "date": CLAIM_DAY.isoformat(), "config": "single-call",
            "exclude_urls": [OWN_FACT_CHECK]})
        assert resp.status_code == 202, resp.data
        job = poll_job(client, auth, resp.get_json()["job_id"], timeout=240)
        assert job["status"] == "succeeded", job
        result = job["result"]
        assert result["config"] == "single-call" and result["verdict"] in LABELS
        assert "progress" not in job  # transient: a finished job has its result instead
        got = wait_for(lambda: receiver.received(path), what="the claim.verified webhook")
        headers, body = got[0]["headers"], got[0]["body"]
        assert headers["X-FactSieve-Event"] == "claim.verified"
        assert headers["X-FactSieve-Signature"] == expected_signature(
            sub["secret"], headers["X-FactSieve-Timestamp"], body)
        data = json.loads(body)["data"]
        assert data["claim"] == CLAIM and data["verdict"] == result["verdict"]
        assert data["qa_pairs"] == result["qa_pairs"]
    finally:
        client.delete(f"/v1/webhooks/{sub['id']}", headers=auth)


def test_a_running_verification_reports_its_stage_and_turn(api_services, evidence_alias):
    from plugin.service.handlers import run_verify
    from plugin.service.jobs import JobKind

    jobs = api_services.jobs
    claim = "Zimbabwe gets more than half of the African Export Import Bank loans."  # no fact-check
    job, _ = jobs.create(JobKind.VERIFY, {"claim": claim, "date": CLAIM_DAY.isoformat(), "config": "qa-loop",
                                          "budget_s": 0.001})
    run_verify(api_services, job, lambda delivery_id: None)  # the handler alone: the job stays running
    progress = jobs.get(job["id"])["progress"]
    # the last stage: the verdict, or the verdict head after invalid verdict output (the local
    # 135M model's ratings often support no verdict)
    assert progress["stage"] in ("verdict", "head") and progress["turn"] is None and progress["at"]


def test_verify_job_fails_with_the_reason_when_the_llm_is_down(
        api_services, client, auth, tmp_path, evidence_alias):
    port = closed_port()
    settings = namespaced(api_services.settings, uuid.uuid4().hex[:10],
                          llm_url=f"http://user:secret@127.0.0.1:{port}/v1", task_max_retries=1)
    from plugin.service.services import Services

    svc = Services(settings, store=api_services.store, embedder=api_services.embedder)
    w = Worker(settings, tmp_path / "worker.log", queues="verify")
    try:
        from api import create_app

        c = create_app(settings, services=svc).test_client()
        key = svc.keys.create("tests", Scope.WRITE)[1]
        h = {"Authorization": f"Bearer {key}"}
        resp = c.post("/v1/verify", headers=h, json={"claim": CLAIM, "config": "qa-loop"})
        job = poll_job(c, h, resp.get_json()["job_id"], timeout=90)
        assert job["status"] == "failed" and job["attempts"] == 2  # one retry, then the reason
        assert job["error"]["title"] == "LLM unavailable" and "LLM" in job["error"]["detail"]
        # issue 21: any key of the tenant reads the job: what failed, not where, never the
        # credentials; the worker log names the address for the operator, without them
        assert "127.0.0.1" not in json.dumps(job) and "secret" not in json.dumps(job)
        log = (tmp_path / "worker.log").read_text(errors="replace")
        assert f"127.0.0.1:{port}" in log and "secret" not in log
    finally:
        w.stop()
        from tests.integration.conftest import cleanup_deployment

        cleanup_deployment(settings, api_services.store)


def test_bad_verify_requests_are_4xx(client, auth):
    cases = [({"claim": ""}, 422), ({"claim": "x", "date": "2999-01-01"}, 400),
             ({"claim": "x", "config": "nope"}, 400), ({"claim": "x" * 20001}, 422),
             ({"claim": "x", "budget_s": 0}, 422)]
    for body, status in cases:
        resp = client.post("/v1/verify", headers=auth, json=body)
        assert resp.status_code == status, (body, resp.data)


def test_evidence_bulk_route_streams_documents_and_reports_rejects(client, auth, api_services):
    body = "\n".join([json.dumps({"url": "https://docs.example.org/a", "title": "A", "text": "One. Two.",
                                  "published_at": "2020-01-01"}),
                      "not json",
                      json.dumps({"url": "https://docs.example.org/ks", "url2text": ["First.", "Second."]})])
    resp = client.post("/v1/evidence", headers={**auth, "Content-Type": "application/x-ndjson"}, data=body)
    assert resp.status_code == 200, resp.data
    report = resp.get_json()
    assert report["documents"] == 2 and report["rejected"] == 1 and "not JSON" in report["rejects"][0]["reason"]
    resp = client.post("/v1/evidence", headers={**auth, "Content-Type": "text/plain"}, data=body)
    assert resp.status_code == 415 and resp.mimetype == "application/problem+json"
