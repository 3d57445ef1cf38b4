"""Per-tenant job quota, fair admission and the limits on requests without a valid key, on the
real Redis and OpenSearch (and a real worker subprocess where jobs must run). Each test has its
own namespace, so the small caps here meet no other test's jobs or failed requests."""
from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from plugin.errors import RateLimited
from plugin.service.admission import FIRST, dispatch_priority
from plugin.service.jobs import JobKind, JobStatus
from plugin.service.keys import Scope

from tests.integration.conftest import (API_FACTCHECKS, Worker, cleanup_deployment, namespaced,
                                        poll_job, problem_of)

pytestmark = pytest.mark.integration

CAP, SLOTS = 3, 1


@pytest.fixture
def deployment(settings, store, embedder):
    """An app whose tenants may have ``CAP`` jobs active and ``SLOTS`` dispatched, no sweeper
    that could send waiting jobs in a test's stead, and at most 3 requests without a valid key."""
    from api import create_app
    from plugin.service.services import Services

    quota_settings = namespaced(settings, "quota-" + uuid.uuid4().hex[:8], tenant_max_active_jobs=CAP,
                                tenant_max_dispatched_jobs=SLOTS, job_sweep_interval_s=3600.0,
                                unauthenticated_rate_limit_requests=3)
    services = Services(quota_settings, store=store, embedder=embedder)
    app = create_app(quota_settings, services=services)
    yield app, services
    cleanup_deployment(quota_settings, store)


def key(services, tenant: str, scope: Scope = Scope.WRITE) -> dict[str, str]:
    return {"Authorization": f"Bearer {services.keys.create(tenant, scope, tenant)[1]}"}


def post(client, headers, post_id: str | None = None):
    return client.post("/v1/posts", headers=headers,
                       json={"id": post_id or f"p-{uuid.uuid4().hex[:8]}", "text": "5G spreads the coronavirus"})


def test_the_job_past_the_cap_is_429_while_another_tenant_gets_202(deployment):
    app, services = deployment
    client = app.test_client()
    flood, flood_read, quiet = key(services, "flood"), key(services, "flood", Scope.READ), key(services, "quiet")
    first = post(client, flood, "first")
    ids = [first.get_json()["job_id"]] + [post(client, flood).get_json()["job_id"] for _ in range(CAP - 1)]
    assert first.status_code == 202 and len(set(ids)) == CAP

    for resp in (post(client, flood),  # a post, and any other kind of job (a read key's rerank)
                 client.post("/v1/rerank", headers=flood_read, json={"text": "5G", "config": "factsieve"})):
        assert resp.status_code == 429
        body = problem_of(resp)
        assert f"{CAP} jobs queued or running" in body["detail"]
        assert "FACTSIEVE_TENANT_MAX_ACTIVE_JOBS" in body["detail"]
        assert int(resp.headers["Retry-After"]) > 0
        assert resp.headers["RateLimit-Limit"] == str(CAP) and resp.headers["RateLimit-Remaining"] == "0"
        assert resp.headers["RateLimit-Reset"] == resp.headers["Retry-After"]

    again = post(client, flood, "first")  # an idempotent resubmit is not a new job: not counted
    assert again.status_code == 202 and again.get_json()["duplicate"] is True
    assert post(client, quiet).status_code == 202  # the other tenant is not affected

    # one of the flooding tenant's jobs is in the Celery queue; the others wait, still queued
    assert services.jobs.admission.dispatched("flood") == {ids[0]}
    assert services.jobs.admission.waiting("flood") == ids[1:]
    assert {client.get(f"/v1/jobs/{i}", headers=flood).get_json()["status"] for i in ids} == {"queued"}


def test_waiting_jobs_are_sent_as_slots_free_and_finished_jobs_free_the_quota(deployment, tmp_path):
    app, services = deployment
    client = app.test_client()
    flood = key(services, "flood")
    resp = client.post("/v1/fact-checks", data=API_FACTCHECKS.read_bytes(),
                       headers={**flood, "Content-Type": "application/x-ndjson"})
    assert resp.status_code == 200
    ids = [post(client, flood).get_json()["job_id"] for _ in range(CAP)]
    assert post(client, flood).status_code == 429

    worker = Worker(services.settings, tmp_path / "worker.log")  # its sweeper never runs here
    try:
        jobs = [poll_job(client, flood, i, timeout=120) for i in ids]
    finally:
        worker.stop()
    assert [j["status"] for j in jobs] == ["succeeded"] * CAP
    # one slot: each waiting job was sent when the one before it ended, never earlier
    for before, after in zip(jobs, jobs[1:]):
        assert datetime.fromisoformat(before["finished_at"]) <= datetime.fromisoformat(after["started_at"])
    assert services.jobs.admission.active("flood") == [] and services.jobs.admission.dispatched("flood") == set()
    assert post(client, flood).status_code == 202  # finished jobs gave their slots back


def test_the_sweeper_releases_slots_a_dead_worker_left(deployment):
    _, services = deployment
    jobs = services.jobs
    made = [jobs.create(JobKind.RERANK, {"text": "x"}, tenant="t")[0]["id"] for _ in range(CAP)]
    for job_id in made:
        jobs.dispatch(job_id, lambda job, priority: None, "redis://test")
    assert jobs.admission.dispatched("t") == {made[0]} and jobs.admission.waiting("t") == made[1:]
    # the first job's worker wrote its end and died before releasing its slots
    record = jobs.get(made[0])
    record.update(status=JobStatus.SUCCEEDED.value, result={})
    services.kv.client.set(services.kv.key("job", made[0]), json.dumps(record))
    with pytest.raises(RateLimited):
        jobs.create(JobKind.RERANK, {"text": "x"}, tenant="t")

    sent: list[dict] = []
    given: list[tuple[str, int]] = []

    def resend(job, priority):
        sent.append(job)
        given.append((job["id"], priority))

    later = datetime.now(timezone.utc) + timedelta(hours=2)
    out = jobs.sweep(running_after_s=3600, queued_after_s=3600, resend=resend, now=later)
    assert (out["released"], out["admitted"]) == (1, 1)
    assert made[1] in {j["id"] for j in sent}
    # admitted at its tenant's priority (2 jobs left, 1 slot); a queued job with a message that
    # is this old (the clock here is 2 h on: lost, or starved) is sent again at FIRST
    assert (made[1], dispatch_priority(2, SLOTS)) in given and (made[1], FIRST) in given
    # the job still waiting has no broker message by design: old as it is, it is not resent
    assert made[2] not in {j["id"] for j in sent} and jobs.admission.waiting("t") == made[2:]
    assert jobs.admission.dispatched("t") == {made[1]}
    jobs.create(JobKind.RERANK, {"text": "x"}, tenant="t")  # the quota has room again


def test_a_quiet_tenants_job_goes_to_a_higher_priority_list_and_runs_before_the_floods(deployment, tmp_path):
    """Both messages are in the broker before the one worker starts: without priorities the
    flood's, sent first, would run first (one FIFO list); with them the quiet tenant's job, sent
    at its lighter load's priority, is in a list the worker's BRPOP names earlier."""
    from workers.names import job_sender

    app, services = deployment
    client = app.test_client()
    resp = client.post("/v1/fact-checks", data=API_FACTCHECKS.read_bytes(),
                       headers={**key(services, "flood"), "Content-Type": "application/x-ndjson"})
    assert resp.status_code == 200
    jobs, send = services.jobs, job_sender(app.extensions["factsieve.celery"])

    def submit(tenant: str) -> str:
        return jobs.submit_post({"id": f"p-{uuid.uuid4().hex[:8]}", "text": "5G spreads the coronavirus"},
                                tenant)[0]["id"]

    flood = [submit("flood") for _ in range(CAP)]  # all counted first: the flood's load is CAP
    for job_id in flood:
        jobs.dispatch(job_id, send, services.kv.url)
    quiet = submit("quiet")
    jobs.dispatch(quiet, send, services.kv.url)
    assert jobs.admission.dispatched("flood") == {flood[0]} and jobs.admission.waiting("flood") == flood[1:]

    celery_keys = f"{services.settings.redis_prefix}:celery:"
    lengths = {pri: services.kv.client.llen(celery_keys + ("match" if pri == 0 else f"match:{pri}"))
               for pri in range(10)}
    high, low = dispatch_priority(1, SLOTS), dispatch_priority(CAP, SLOTS)
    assert high < low  # Redis serves the lower number first
    assert {pri: n for pri, n in lengths.items() if n} == {high: 1, low: 1}

    admin = key(services, "admin", Scope.ADMIN)  # sees every tenant's jobs
    worker = Worker(services.settings, tmp_path / "worker.log")  # its sweeper never runs here
    try:
        done = {i: poll_job(client, admin, i, timeout=120) for i in [quiet, *flood]}
    finally:
        worker.stop()
    assert {j["status"] for j in done.values()} == {"succeeded"}
    assert sorted(done, key=lambda i: datetime.fromisoformat(done[i]["started_at"])) == [quiet, *flood]


def test_a_job_that_fails_to_dispatch_frees_its_slot(deployment):
    _, services = deployment
    jobs = services.jobs
    job_id = jobs.create(JobKind.RERANK, {"text": "x"}, tenant="t")[0]["id"]

    def down(job, priority) -> None:
        raise ConnectionError("queue down")

    with pytest.raises(Exception, match="not reachable"):
        jobs.dispatch(job_id, down, "redis://test")
    assert jobs.get(job_id)["status"] == JobStatus.FAILED.value
    assert jobs.admission.active("t") == [] and jobs.admission.dispatched("t") == set()


def test_requests_without_a_valid_key_are_rate_limited_per_address(deployment):
    app, services = deployment
    client = app.test_client()
    bad = {"Authorization": "Bearer fsk_wrong"}
    codes = [client.get("/v1/webhooks", headers=bad).status_code for _ in range(2)]
    codes.append(client.get("/v1/webhooks").status_code)  # no key at all counts too
    assert codes == [401, 401, 401]
    for headers in (bad, {**bad, "X-Forwarded-For": "198.51.100.7"}):  # not trusted: no way out
        resp = client.get("/v1/webhooks", headers=headers)
        assert resp.status_code == 429
        assert "without a valid API key" in problem_of(resp)["detail"]
        assert 0 < int(resp.headers["Retry-After"]) <= services.settings.rate_limit_window_s
        assert resp.headers["RateLimit-Limit"] == "3" and resp.headers["RateLimit-Remaining"] == "0"
        assert resp.headers["RateLimit-Reset"] == resp.headers["Retry-After"]
    # a valid key from the same address still works
    ok = client.get("/v1/webhooks", headers=key(services, "someone"))
    assert ok.status_code == 200 and ok.headers["RateLimit-Limit"] == str(services.settings.rate_limit_requests)


def test_behind_a_trusted_proxy_the_forwarded_address_is_counted(settings, store, embedder):
    from api import create_app
    from plugin.service.services import Services

    proxied = namespaced(settings, "proxy-" + uuid.uuid4().hex[:8], unauthenticated_rate_limit_requests=1,
                         trust_x_forwarded_for=True)
    try:
        client = create_app(proxied, services=Services(proxied, store=store, embedder=embedder)).test_client()
        codes = [client.get("/v1/webhooks", headers={"X-Forwarded-For": f"203.0.113.9, {addr}"}).status_code
                 for addr in ("192.0.2.1", "192.0.2.1", "192.0.2.2")]
        assert codes == [401, 429, 401]
    finally:
        cleanup_deployment(proxied, store)
