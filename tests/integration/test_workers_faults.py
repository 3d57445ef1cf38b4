"""kill -9 of a worker that holds a job: after a restart every job completes exactly once and
every webhook is delivered exactly once. Its own namespace, worker processes and alias."""
from __future__ import annotations

import json
import time
import uuid

import pytest

from plugin.service.keys import Scope

from tests.integration.conftest import (API_FACTCHECKS, Receiver, Worker, cleanup_deployment,
                                        namespaced, wait_for)

pytestmark = pytest.mark.integration


@pytest.fixture
def deployment(settings, store, embedder, tmp_path):
    from api import create_app
    from plugin.service.services import Services

    receiver = Receiver()
    fault_settings = namespaced(settings, "kill-" + uuid.uuid4().hex[:8],
                                webhook_allowed_hosts=(receiver.origin,))
    services = Services(fault_settings, store=store, embedder=embedder)
    app = create_app(fault_settings, services=services)
    yield app, services, receiver
    receiver.close()
    cleanup_deployment(fault_settings, store)


def test_kill9_mid_job_then_restart_completes_once(deployment, tmp_path):
    app, services, receiver = deployment
    client = app.test_client()
    headers = {"Authorization": f"Bearer {services.keys.create('fault test', Scope.WRITE)[1]}"}
    resp = client.post("/v1/fact-checks", data=API_FACTCHECKS.read_bytes(),
                       headers={**headers, "Content-Type": "application/x-ndjson"})
    assert resp.status_code == 200 and resp.get_json()["indexed"] == 8
    sub = client.post("/v1/webhooks", headers=headers, json={
        "url": receiver.url("/hook"), "events": ["post.matched"]}).get_json()

    # a job that holds the worker for seconds (embedding 240 fact-checks), then three posts
    rows = [{"id": f"bulk-{i}", "claim": f"Claim {i}: the river {i} flows uphill on Tuesdays", "lang": "en"}
            for i in range(240)]
    ingest_job = client.post("/v1/fact-checks?async=true", json=rows, headers=headers).get_json()["job_id"]
    posts = [{"id": f"kill-{i}-{uuid.uuid4().hex[:6]}", "text": text} for i, text in enumerate(
        ["hot lemon water cures covid", "5G spreads coronavirus", "masks cause CO2 poisoning"])]
    for post in posts:
        assert client.post("/v1/posts", json=post, headers=headers).status_code == 202

    def job(job_id: str) -> dict:
        return client.get(f"/v1/jobs/{job_id}", headers=headers).get_json()

    first = Worker(services.settings, tmp_path / "worker-1.log", queues="ingest,match,webhooks")
    try:
        wait_for(lambda: job(ingest_job)["status"] == "running", timeout=60, interval=0.05,
                 what="the ingest job to start")
        time.sleep(0.2)  # inside the job: past its start, far from its end
        first.kill9()
    finally:
        first.stop()
    held = job(ingest_job)
    assert held["status"] == "running" and held["attempts"] == 1, "the job finished before the kill"

    second = Worker(services.settings, tmp_path / "worker-2.log", queues="ingest,match,webhooks")
    try:
        done = wait_for(lambda: (j := job(ingest_job))["status"] in ("succeeded", "failed") and j,
                        timeout=90, what="the ingest job to finish after the restart")
        wait_for(lambda: len({r["headers"]["X-FactSieve-Delivery"] for r in receiver.received("/hook")}) == 3,
                 timeout=60, what="three deliveries")
        time.sleep(2.0)  # room for a duplicate to show up
    finally:
        second.stop()

    assert done["status"] == "succeeded" and done["attempts"] == 2, done
    report = done["result"]
    assert report["indexed"] + report["updated"] == 240 and report["rejected"] == 0
    services.store.refresh(services.settings.index)
    assert services.store.count(services.settings.index) == 248
    got = receiver.received("/hook")
    assert len(got) == 3, [json.loads(r["body"])["data"]["post"]["id"] for r in got]
    assert sorted(json.loads(r["body"])["data"]["post"]["id"] for r in got) == sorted(p["id"] for p in posts)
    log = client.get(f"/v1/webhooks/{sub['id']}/deliveries", headers=headers).get_json()["deliveries"]
    assert sorted(len(d["attempts"]) for d in log) == [1, 1, 1]
    assert all(d["status"] == "delivered" for d in log)
    for post in posts:
        assert client.get(f"/v1/posts/{post['id']}", headers=headers).get_json()["status"] == "succeeded"
