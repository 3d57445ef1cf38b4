"""The HTTP API's jobs, posts and webhooks (without a worker) and its answers when a backend is
down, through Flask's test client over the real OpenSearch and Redis."""
from __future__ import annotations

import uuid

import pytest

from tests.integration.conftest import closed_port, problem_of

pytestmark = pytest.mark.integration


# -- jobs, posts, webhooks (without a worker) ------------------------------------------------------
def test_unknown_job_is_404(client, auth):
    resp = client.get("/v1/jobs/job_doesnotexist", headers=auth)
    assert resp.status_code == 404 and "job_doesnotexist" in problem_of(resp)["detail"]
    assert client.get("/v1/posts/never-posted", headers=auth).status_code == 404


def test_post_is_idempotent_on_its_id(client, auth):
    post = {"id": f"p-{uuid.uuid4().hex}", "text": "5G towers spread the virus", "lang": "en"}
    first = client.post("/v1/posts", json=post, headers=auth)
    assert first.status_code == 202, first.data
    again = client.post("/v1/posts", json=post, headers=auth)
    assert again.status_code == 202
    assert again.get_json()["job_id"] == first.get_json()["job_id"]
    assert (first.get_json()["duplicate"], again.get_json()["duplicate"]) == (False, True)
    assert first.headers["Location"] == first.get_json()["status_url"]
    resp = client.post("/v1/posts", json={**post, "text": "something else"}, headers=auth)
    assert resp.status_code == 409 and "different content" in problem_of(resp)["detail"]


def test_webhook_crud_and_secret_shown_once(client, auth, receiver):
    resp = client.post("/v1/webhooks", headers=auth, json={
        # a filter no post passes: a worker running beside this test must not deliver to it
        "url": receiver.url("/crud"), "events": ["post.matched"], "languages": ["ko"], "min_score": 999.5})
    assert resp.status_code == 201, resp.data
    created = resp.get_json()
    assert len(created["secret"]) >= 32 and resp.headers["Location"] == f"/v1/webhooks/{created['id']}"
    listed = client.get("/v1/webhooks", headers=auth).get_json()["webhooks"]
    assert created["id"] in [w["id"] for w in listed] and all("secret" not in w for w in listed)
    got = client.get(f"/v1/webhooks/{created['id']}", headers=auth).get_json()
    assert got == {k: v for k, v in created.items() if k != "secret"}
    assert client.get(f"/v1/webhooks/{created['id']}/deliveries", headers=auth).get_json() == {"deliveries": []}
    assert client.get(f"/v1/webhooks/{created['id']}/deliveries?limit=500", headers=auth).status_code == 200
    for limit in ("²", "0", "501", "x", "１２", "9" * 5000):  # "²".isdigit(), then int() raised: a 500
        resp = client.get(f"/v1/webhooks/{created['id']}/deliveries", query_string={"limit": limit},
                          headers=auth)
        assert resp.status_code == 400, (limit, resp.data)
        assert problem_of(resp)["errors"][0]["field"] == "limit"
    rotated = client.post(f"/v1/webhooks/{created['id']}/secret", headers=auth)
    assert rotated.status_code == 200 and rotated.get_json()["secret"] not in (created["secret"], None)
    assert client.delete(f"/v1/webhooks/{created['id']}", headers=auth).status_code == 204
    assert client.get(f"/v1/webhooks/{created['id']}", headers=auth).status_code == 404
    given = client.post("/v1/webhooks", headers=auth, json={
        "url": receiver.url("/crud"), "events": ["post.matched"], "secret": "s" * 20})
    assert given.get_json()["secret"] == "s" * 20
    client.delete(f"/v1/webhooks/{given.get_json()['id']}", headers=auth)


@pytest.mark.parametrize("url, message", [
    ("http://10.1.2.3/hook", "private"),
    ("http://169.254.169.254/latest/meta-data", "link-local"),
    ("http://localhost:8080/hook", "loopback"),
    ("ftp://example.org/hook", "http or https"),
    ("http://user:pw@example.org/hook", "credentials"),
    ("http://no-such-host.invalid/hook", "does not resolve"),
])
def test_webhook_urls_are_checked(client, auth, url, message):
    resp = client.post("/v1/webhooks", headers=auth, json={"url": url, "events": ["post.matched"]})
    assert resp.status_code == 422
    body = problem_of(resp)
    assert message in body["detail"] and body["errors"][0]["field"] == "url"


def test_an_allowed_origin_opens_its_own_port_only(client, auth, receiver, api_settings):
    # the session allows exactly the receiver's origin (and a closed one): OpenSearch, Redis and
    # the LLM on the same host, another port, another scheme or another name for it are refused
    from plugin.net.outbound import backends_of

    probe = f"fs-test-whk-probe-{uuid.uuid4().hex[:8]}"
    urls = [f"http://{b.host}:{b.port}/{probe}/_doc/x" for b in backends_of(api_settings.backend_urls)]
    urls += [f"http://127.0.0.1:{closed_port()}/hook", f"https://127.0.0.1:{receiver.port}/hook",
             f"http://localhost:{receiver.port}/hook", f"http://[::1]:{receiver.port}/hook"]
    assert any(":9200/" in u for u in urls) and any(":6379/" in u for u in urls)
    for url in urls:
        resp = client.post("/v1/webhooks", headers=auth, json={"url": url, "events": ["post.matched"]})
        assert resp.status_code == 422, (url, resp.data)
        assert problem_of(resp)["errors"][0]["field"] == "url"
    resp = client.post("/v1/webhooks", headers=auth, json={"url": receiver.url("/origin"), "events": ["post.matched"],
                                                           "languages": ["ko"], "min_score": 999.5})
    assert resp.status_code == 201
    client.delete(f"/v1/webhooks/{resp.get_json()['id']}", headers=auth)


def _own_origins(settings) -> tuple[str, ...]:
    """Every origin that reaches one of the deployment's own services, by name and by address."""
    from plugin.net.outbound import backends_of

    out = []
    for b in backends_of(settings.backend_urls):
        hosts = [b.host] + (["127.0.0.1", "localhost", "[::1]", "0.0.0.0"] if b.host in ("127.0.0.1", "localhost") else [])
        out += [f"http://{h}:{b.port}" for h in hosts]
    return tuple(dict.fromkeys(out))


def test_own_services_are_refused_even_when_their_origins_are_allowed(api_settings, store, embedder, write_key):
    from api import create_app
    from plugin.service.services import Services

    own = _own_origins(api_settings)
    settings = api_settings.model_copy(update={"webhook_allowed_hosts": own})
    client = create_app(settings, services=Services(settings, store=store, embedder=embedder)).test_client()
    probe = f"fs-test-whk-probe-{uuid.uuid4().hex[:8]}"
    for origin in own:
        resp = client.post("/v1/webhooks", headers={"Authorization": f"Bearer {write_key}"},
                           json={"url": f"{origin}/{probe}/_doc/x", "events": ["post.matched"]})
        assert resp.status_code == 422, (origin, resp.data)
        assert "FactSieve's own services" in problem_of(resp)["detail"]
    assert not store.index_exists(probe)


def test_a_delivery_never_reaches_opensearch_through_a_name_that_turned_into_it(api_services, api_settings):
    # allowed, and public when subscribed; OpenSearch's address by the time the attempt comes
    import socket

    from plugin.net.outbound import backends_of
    from plugin.net.outbound import resolve_host
    from plugin.service.webhooks import DeliveryStatus, Event, WebhookStore

    node = next(b for b in backends_of(api_settings.backend_urls) if b.what == "OpenSearch")
    answers = {"hooks.internal": ["93.184.216.34"]}
    settings = api_settings.model_copy(
        update={"webhook_allowed_hosts": (f"http://hooks.internal:{node.port}",)})
    hooks = WebhookStore(api_services.kv, settings,
                         resolve=lambda host: answers[host] if host in answers else resolve_host(host))
    probe = f"fs-test-whk-probe-{uuid.uuid4().hex[:8]}"
    sub = hooks.create(f"http://hooks.internal:{node.port}/{probe}/_doc/x", [Event.POST_MATCHED])
    try:
        did = hooks.plan(hooks._load(sub["id"]), Event.POST_MATCHED, {"post": {"id": "p"}}, "p")
        answers["hooks.internal"] = [socket.gethostbyname(node.host)]
        assert hooks.attempt(did).status is DeliveryStatus.FAILED
        (attempt,) = hooks.delivery(did)["attempts"]
        assert attempt["error"].startswith("refused: ") and "FactSieve's own services" in attempt["error"]
        assert answers["hooks.internal"][0] not in attempt["error"]  # what the name resolved to
        assert not api_services.store.index_exists(probe)
    finally:
        hooks.delete(sub["id"])
        api_services.store.delete_index(probe)


def test_secret_rotation_overlap_is_checked(client, auth, receiver):
    sub = client.post("/v1/webhooks", headers=auth, json={
        "url": receiver.url("/overlap"), "events": ["post.matched"], "languages": ["ko"], "min_score": 999.5}).get_json()
    try:
        for bad in ("-1", "abc", "2592001", "1e3", "\u0661", "9" * 5000):  # 5000 digits: int() raised
            resp = client.post(f"/v1/webhooks/{sub['id']}/secret", query_string={"overlap_s": bad}, headers=auth)
            assert resp.status_code == 400 and "overlap_s" in problem_of(resp)["detail"], bad
        resp = client.post(f"/v1/webhooks/{sub['id']}/secret?overlap_s=0", headers=auth)
        assert resp.status_code == 200 and resp.get_json()["secret"] != sub["secret"]
    finally:
        client.delete(f"/v1/webhooks/{sub['id']}", headers=auth)


def test_webhook_validation(client, auth):
    resp = client.post("/v1/webhooks", headers=auth, json={"url": "http://127.0.0.1:1/x", "events": []})
    assert resp.status_code == 422 and problem_of(resp)["errors"][0]["field"] == "events"
    resp = client.post("/v1/webhooks", headers=auth, json={"url": "http://127.0.0.1:1/x", "events": ["post.deleted"]})
    assert resp.status_code == 422
    resp = client.post("/v1/webhooks", headers=auth, json={"url": "http://127.0.0.1:1/x", "events": ["post.matched"],
                                                           "secret": "short"})
    assert resp.status_code == 422 and problem_of(resp)["errors"][0]["field"] == "secret"


# -- backends down ------------------------------------------------------------------------------------
def test_opensearch_unreachable_is_503_with_retry_after(api_settings, embedder, write_key):
    from api import create_app
    from plugin.service.services import Services

    settings = api_settings.model_copy(update={"opensearch_url": "http://admin:s3cret@127.0.0.1:9",
                                               "opensearch_timeout_s": 2.0})
    client = create_app(settings, services=Services(settings, embedder=embedder)).test_client()
    resp = client.get("/readyz")
    assert resp.status_code == 503 and resp.headers["Retry-After"] == "5"
    body = problem_of(resp)
    assert body["checks"] == {"opensearch": False, "redis": True, "model": True}
    resp = client.post("/v1/match", json={"text": "5G spreads the virus"},
                       headers={"Authorization": f"Bearer {write_key}"})
    assert resp.status_code == 503 and int(resp.headers["Retry-After"]) > 0
    detail = problem_of(resp)["detail"]
    # what failed, not where, and never the credentials
    assert "OpenSearch" in detail and "127.0.0.1" not in detail and "s3cret" not in detail


def test_redis_unreachable_is_503(api_settings, store, embedder, write_key):
    from api import create_app
    from plugin.service.services import Services

    settings = api_settings.model_copy(update={"redis_url": "redis://:hunter2@127.0.0.1:9/0"})
    client = create_app(settings, services=Services(settings, store=store, embedder=embedder)).test_client()
    assert client.get("/readyz").status_code == 503
    resp = client.post("/v1/match", json={"text": "x"}, headers={"Authorization": f"Bearer {write_key}"})
    assert resp.status_code == 503 and resp.headers["Retry-After"]
    detail = problem_of(resp)["detail"]
    assert "Redis" in detail and "hunter2" not in detail and "127.0.0.1" not in detail
