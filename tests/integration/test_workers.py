"""Jobs end to end with a real ``factsieve worker`` subprocess over the real Redis: posts →
match → signed webhooks to a local receiver, verify/rerank/ingest jobs, retries and failed
deliveries, and results that outlive Redis."""
from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid

import pytest

from tests.integration.conftest import poll_job, problem_of, wait_for

pytestmark = pytest.mark.integration


def expected_signature(secret: str, timestamp: str, body: bytes) -> str:
    """The documented scheme, computed here independently of ``plugin.service.webhooks``."""
    return "sha256=" + hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


def subscribe(client, auth, url: str, **extra) -> dict:
    resp = client.post("/v1/webhooks", headers=auth, json={"url": url, "events": ["post.matched"], **extra})
    assert resp.status_code == 201, resp.data
    return resp.get_json()


@pytest.fixture
def hooks(client, auth):
    made: list[str] = []

    def make(url: str, **extra) -> dict:
        sub = subscribe(client, auth, url, **extra)
        made.append(sub["id"])
        return sub

    yield make
    for sub_id in made:
        client.delete(f"/v1/webhooks/{sub_id}", headers=auth)


def test_post_is_matched_and_delivered_signed(client, auth, worker, receiver, hooks):
    path = f"/post-{uuid.uuid4().hex[:8]}"
    sub = hooks(receiver.url(path))
    korean_only = hooks(receiver.url(path + "-ko"), languages=["ko"])
    too_high = hooks(receiver.url(path + "-high"), min_score=1000.0)
    post = {"id": f"tweet-{uuid.uuid4().hex[:8]}", "text": "BREAKING: 5G masts are spreading the coronavirus!!",
            "date": "2020-05-01", "url": "https://social.example.com/p/1", "source": "social"}
    resp = client.post("/v1/posts", json=post, headers=auth)
    assert resp.status_code == 202
    job = poll_job(client, auth, resp.get_json()["job_id"])
    assert job["status"] == "succeeded", job
    assert job["result"]["match"]["matches"][0]["id"] == "api-2"

    def for_this_post() -> list[dict]:  # posts queued by other tests may match this subscription too
        return [r for r in receiver.received(path) if json.loads(r["body"])["data"]["post"]["id"] == post["id"]]

    got = wait_for(for_this_post, what="the webhook")
    request = got[0]
    assert len(got) == 1
    headers, body = request["headers"], request["body"]
    assert headers["X-FactSieve-Signature"] == expected_signature(sub["secret"], headers["X-FactSieve-Timestamp"], body)
    assert abs(time.time() - int(headers["X-FactSieve-Timestamp"])) < 60
    assert headers["Content-Type"] == "application/json" and headers["X-FactSieve-Event"] == "post.matched"
    payload = json.loads(body)
    assert payload["event"] == "post.matched" and payload["subscription_id"] == sub["id"]
    assert payload["id"] == headers["X-FactSieve-Delivery"]
    assert payload["data"]["post"]["id"] == post["id"]
    assert payload["data"]["match"]["matches"][0]["url"] == "https://checks.example.org/5g-coronavirus"
    assert job["result"]["deliveries"] == [{"subscription_id": sub["id"], "delivery_id": payload["id"]}]

    log = wait_for(lambda: [d for d in client.get(f"/v1/webhooks/{sub['id']}/deliveries", headers=auth)
                            .get_json()["deliveries"] if d["status"] == "delivered" and d["ref"] == post["id"]],
                   what="the delivery log")
    assert [a["status_code"] for a in log[0]["attempts"]] == [200]
    # filters: the Korean-only and the high-threshold subscriptions got nothing
    for other in (korean_only, too_high):
        assert client.get(f"/v1/webhooks/{other['id']}/deliveries", headers=auth).get_json() == {"deliveries": []}
    # idempotent: posting again neither re-runs nor re-delivers
    again = client.post("/v1/posts", json=post, headers=auth).get_json()
    assert again["duplicate"] is True and again["status"] == "succeeded"
    assert client.get(f"/v1/posts/{post['id']}", headers=auth).get_json()["status"] == "succeeded"
    time.sleep(0.5)
    assert len(for_this_post()) == 1


def test_verify_job(client, auth, worker):
    resp = client.post("/v1/verify", json={"claim": "The Great Wall of China can be seen from the moon",
                                           "config": "lookup"}, headers=auth)
    assert resp.status_code == 202 and resp.headers["Location"] == resp.get_json()["status_url"]
    job = poll_job(client, auth, resp.get_json()["job_id"])
    assert job["status"] == "succeeded" and job["kind"] == "verify" and job["attempts"] == 1
    result = job["result"]
    assert result["stage"] == "previously-fact-checked" and result["stopped_because"] == "fact-check-found"
    assert result["verdict"] == "Refuted" and result["match"]["rating"] == "False"
    assert result["citations"][0]["url"] == "https://checks.example.org/great-wall-moon"
    assert result["justification"].endswith("[1]") and result["tokens"]["prompt"] == 0


def test_rerank_job_without_reranker_says_so(client, auth, worker):
    # a configuration without a rerank stage: the outcome must not depend on which trained
    # rerankers happen to sit in this machine's model cache
    resp = client.post("/v1/rerank", json={"text": "carrots help you see in the dark", "k": 2,
                                           "config": "factsieve"}, headers=auth)
    job = poll_job(client, auth, resp.get_json()["job_id"])
    assert job["status"] == "succeeded"
    assert job["result"]["reranked"] is False and "fused" in job["result"]["note"]
    assert job["result"]["matches"][0]["id"] == "api-6"


def test_failed_job_has_a_problem(client, auth, worker, app, api_services):
    resp = client.post("/v1/verify", json={"claim": "anything", "config": "no-such-config"}, headers=auth)
    assert resp.status_code == 400 and "no-such-config" in problem_of(resp)["detail"]
    # a job that fails in the worker (its configuration vanished after it was queued)
    from plugin.service.jobs import JobKind
    from workers.names import TASKS

    job, _ = api_services.jobs.create(JobKind.VERIFY, {"claim": "anything", "config": "no-such-config"})
    app.extensions["factsieve.celery"].send_task(TASKS[JobKind.VERIFY], args=[job["id"]], task_id=job["id"])
    job = poll_job(client, auth, job["id"])
    assert job["status"] == "failed" and job["error"]["status"] == 400
    assert "no-such-config" in job["error"]["detail"] and "Traceback" not in json.dumps(job)


def test_async_ingest_job_and_result_survives_redis(client, auth, worker, api_services):
    rows = [{"id": f"async-{i}", "claim": f"Synthetic claim number {i} about rivers", "lang": "en"}
            for i in range(3)] + [{"id": "async-bad", "claim": ""}]
    resp = client.post("/v1/fact-checks?async=true", json=rows, headers=auth)
    assert resp.status_code == 202
    job = poll_job(client, auth, resp.get_json()["job_id"])
    assert job["status"] == "succeeded", job
    assert (job["result"]["indexed"] + job["result"]["updated"], job["result"]["rejected"]) == (3, 1)
    # Redis forgets the job (a flush, or its TTL): the finished result is still served
    kv = api_services.kv
    assert kv.client.delete(kv.key("job", job["id"])) == 1
    again = client.get(f"/v1/jobs/{job['id']}", headers=auth).get_json()
    assert again == job


def test_retry_then_delivered(client, auth, worker, receiver, hooks):
    path = f"/fail-then-ok-{uuid.uuid4().hex[:8]}"
    sub = hooks(receiver.url(path))
    post = {"id": f"retry-{uuid.uuid4().hex[:8]}", "text": "honey never goes bad if sealed"}
    client.post("/v1/posts", json=post, headers=auth)
    log = wait_for(lambda: [d for d in client.get(f"/v1/webhooks/{sub['id']}/deliveries", headers=auth)
                            .get_json()["deliveries"] if d["status"] == "delivered" and d["ref"] == post["id"]],
                   what="a delivery")
    assert [a["status_code"] for a in log[0]["attempts"]] == [500, 200]
    assert log[0]["attempts"][0]["error"] == "HTTP 500"
    got = [r for r in receiver.received(path) if json.loads(r["body"])["data"]["post"]["id"] == post["id"]]
    assert len(got) == 2 and len({r["headers"]["X-FactSieve-Delivery"] for r in got}) == 1


def test_rotation_without_overlap_signs_with_the_new_secret_only(client, auth, worker, receiver, hooks):
    path = f"/rotated-{uuid.uuid4().hex[:8]}"
    sub = hooks(receiver.url(path))
    resp = client.post(f"/v1/webhooks/{sub['id']}/secret?overlap_s=0", headers=auth)
    assert resp.status_code == 200
    new = resp.get_json()["secret"]
    post = {"id": f"rotated-{uuid.uuid4().hex[:8]}", "text": "honey never goes bad if sealed"}
    client.post("/v1/posts", json=post, headers=auth)
    got = wait_for(lambda: [r for r in receiver.received(path)
                            if json.loads(r["body"])["data"]["post"]["id"] == post["id"]], what="the webhook")
    headers, body = got[0]["headers"], got[0]["body"]
    ts = headers["X-FactSieve-Timestamp"]
    # one signature, the new secret's: the old one was revoked at once
    assert headers["X-FactSieve-Signature"] == expected_signature(new, ts, body)
    assert expected_signature(sub["secret"], ts, body) not in headers["X-FactSieve-Signature"]


def test_receiver_down_retries_then_fails(client, auth, worker, hooks, down_origin):
    sub = hooks(f"{down_origin}/down")
    post = {"id": f"down-{uuid.uuid4().hex[:8]}", "text": "lightning never hits the same spot twice"}
    client.post("/v1/posts", json=post, headers=auth)
    log = wait_for(lambda: [d for d in client.get(f"/v1/webhooks/{sub['id']}/deliveries", headers=auth)
                            .get_json()["deliveries"] if d["status"] == "failed" and d["ref"] == post["id"]],
                   timeout=30, what="a failed delivery")
    attempts = log[0]["attempts"]
    assert [a["n"] for a in attempts] == [1, 2, 3]  # webhook_max_attempts=3 in the test settings
    assert all(a["status_code"] is None and "ConnectionError" in a["error"] for a in attempts)
    assert log[0]["next_attempt_in_s"] is None


def test_unknown_subscription_deliveries_404(client, auth):
    resp = client.get("/v1/webhooks/whk_nope/deliveries", headers=auth)
    assert resp.status_code == 404 and problem_of(resp)


def evidence_passages(api_services, domain: str) -> int:
    """Passages from ``domain`` in the session's evidence alias (0 when there is no alias yet)."""
    alias = api_services.settings.evidence_index
    if not api_services.store.alias_indices(alias):
        return 0
    api_services.store.refresh(alias)
    found = api_services.store.search(alias, {"size": 0, "track_total_hits": True,
                                              "query": {"term": {"domain": domain}}})
    return found["hits"]["total"]["value"]


def test_evidence_body_over_the_sync_limit_is_a_job_a_worker_completes(client, auth, worker, api_services):
    domain = f"ev-{uuid.uuid4().hex[:8]}.example.org"
    docs = [json.dumps({"url": f"https://{domain}/{i}", "title": "Glaciers",
                        "text": f"Glacier {i} lost a tenth of its ice. It was measured in 2019."}) for i in range(3)]
    # blank padding past the 64 KiB sync limit: a large body, a handful of passages
    body = "\n".join(docs[:2] + [" " * (api_services.settings.sync_ingest_max_bytes + 10)] + docs[2:] + ["not json"])
    resp = client.post("/v1/evidence", data=body.encode(), headers={**auth, "Content-Type": "application/x-ndjson"})
    assert resp.status_code == 202, resp.data
    job = poll_job(client, auth, resp.get_json()["job_id"])
    assert job["status"] == "succeeded" and job["kind"] == "evidence", job
    assert (job["result"]["documents"], job["result"]["indexed"], job["result"]["rejected"]) == (3, 3, 1)
    assert evidence_passages(api_services, domain) == 3


def test_evidence_job_over_the_passage_cap_fails_before_any_write(client, auth, worker, app, api_services):
    """The job checks its input's caps itself (settings may have changed since it was queued)."""
    from plugin.service.jobs import JobKind
    from workers.names import TASKS

    cap = api_services.settings.max_passages_per_request
    domain = f"cap-{uuid.uuid4().hex[:8]}.example.org"
    body = "\n".join(json.dumps({"url": f"https://{domain}/{i}", "text": "Ice melts."}) for i in range(cap + 1))
    job, _ = api_services.jobs.create(JobKind.EVIDENCE, {"name": "body"}, body=body)
    app.extensions["factsieve.celery"].send_task(TASKS[JobKind.EVIDENCE], args=[job["id"]], task_id=job["id"])
    job = poll_job(client, auth, job["id"])
    assert job["status"] == "failed" and job["error"]["status"] == 413, job
    assert "FACTSIEVE_MAX_PASSAGES_PER_REQUEST" in job["error"]["detail"]
    assert evidence_passages(api_services, domain) == 0
