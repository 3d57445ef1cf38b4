"""The HTTP API through Flask's test client, over the real OpenSearch and Redis: success shapes,
validation, auth, rate limits and error bodies (always application/problem+json)."""
from __future__ import annotations

import io
import json
import uuid

import pytest

from tests.guards import hang_guard
from tests.integration.conftest import API_FACTCHECKS, closed_port, problem_of

pytestmark = pytest.mark.integration


# -- health and spec ----------------------------------------------------------------------------
def test_healthz_and_readyz_are_public(client):
    assert client.get("/healthz").get_json() == {"status": "ok"}
    resp = client.get("/readyz")
    assert resp.status_code == 200
    assert resp.get_json() == {"status": "ready", "checks": {"opensearch": True, "redis": True, "model": True}}


def test_openapi_documents_every_route(client, app):
    resp = client.get("/openapi.json")
    assert resp.status_code == 200
    spec = resp.get_json()
    documented = {(path, method.upper()) for path, ops in spec["paths"].items() for method in ops}
    routed = set()
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":
            continue
        path = rule.rule.replace("<path:", "<").replace("<", "{").replace(">", "}")
        routed |= {(path, m) for m in rule.methods - {"HEAD", "OPTIONS"}}
    assert routed == documented
    match = spec["paths"]["/v1/match"]["post"]
    assert match["requestBody"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/MatchIn"}
    assert {"200", "401", "422", "429", "503"} <= set(match["responses"])
    assert spec["paths"]["/healthz"]["get"]["security"] == []


# -- matching -----------------------------------------------------------------------------------
def test_match_returns_the_fact_check(client, auth, api_corpus):
    resp = client.post("/v1/match", json={"text": "does lemon in hot water cure covid?", "k": 3}, headers=auth)
    assert resp.status_code == 200, resp.data
    body = resp.get_json()
    assert body["lang"] == "en" and len(body["matches"]) == 3
    top = body["matches"][0]
    assert top["id"] == "api-1" and top["url"] == "https://checks.example.org/hot-lemon-water-covid"
    assert top["rating"] == "False" and top["verdict"] == "Refuted"
    assert body["reranked"] is False and body["notes"] == []
    assert resp.headers["RateLimit-Limit"] and int(resp.headers["RateLimit-Remaining"]) >= 0


def test_match_crosslingual_filters_and_rerank_note(client, auth, api_corpus):
    resp = client.post("/v1/match", headers=auth, json={
        "text": "COVID vaccines contain microchips", "mode": "cross", "date": "2022-01-01",
        "lang": "en", "rerank": True, "k": 5})
    body = resp.get_json()
    assert resp.status_code == 200
    assert body["matches"][0]["id"] == "api-5"
    assert body["reranked"] is False and "no reranker" in body["notes"][0]
    # the date filter: nothing published after the post date
    resp = client.post("/v1/match", headers=auth, json={"text": "Lightning strikes twice", "date": "2017-01-01"})
    assert all(m["published_at"] is None or m["published_at"] <= "2017-01-01" for m in resp.get_json()["matches"])


@pytest.mark.parametrize("payload, field", [
    ({"text": "x", "k": 0}, "k"),
    ({"text": "x", "k": "5"}, "k"),                      # strict: a string is not an integer
    ({"text": "x", "mode": "sideways"}, "mode"),
    ({"text": "x", "lang": "english"}, "lang"),
    ({"text": "x", "date": "yesterday"}, "date"),
    ({"text": "   "}, "text"),
    ({"text": "x", "colour": "red"}, "colour"),         # unknown field
    ({"k": 3}, "text"),
    ({"text": "x", "within_days": 3}, "(body)"),
    ([1, 2], "(body)"),
])
def test_match_validation_is_422_with_field_errors(client, auth, payload, field):
    resp = client.post("/v1/match", json=payload, headers=auth)
    assert resp.status_code == 422
    body = problem_of(resp)
    assert field in [e["field"] for e in body["errors"]], body


def test_bad_bodies(client, auth):
    resp = client.post("/v1/match", data=b"{not json", headers={**auth, "Content-Type": "application/json"})
    assert resp.status_code == 400 and "not valid JSON" in problem_of(resp)["detail"]
    resp = client.post("/v1/match", data=b"text=hello", headers={**auth, "Content-Type": "application/x-www-form-urlencoded"})
    assert resp.status_code == 415 and problem_of(resp)
    resp = client.post("/v1/match", json={"text": "x" * 300_000}, headers=auth)
    assert resp.status_code == 413 and problem_of(resp)["title"] == "Request Entity Too Large"


def test_unknown_config_is_400(client, auth, api_corpus):
    resp = client.post("/v1/match", json={"text": "hello", "config": "nope"}, headers=auth)
    assert resp.status_code == 400 and "unknown retrieval configuration" in problem_of(resp)["detail"]


def test_unknown_route_and_method_are_problems(client, auth):
    resp = client.get("/v2/nothing", headers=auth)
    assert resp.status_code == 404 and problem_of(resp)
    resp = client.get("/v1/match", headers=auth)
    assert resp.status_code == 405 and "POST" in resp.headers["Allow"] and problem_of(resp)


# -- auth and rate limits ---------------------------------------------------------------------------
def test_missing_and_unknown_keys_are_401(client):
    resp = client.post("/v1/match", json={"text": "x"})
    assert resp.status_code == 401 and resp.headers["WWW-Authenticate"].startswith("Bearer")
    assert "Bearer" in problem_of(resp)["detail"]
    resp = client.post("/v1/match", json={"text": "x"}, headers={"Authorization": "Bearer fsk_nope"})
    assert resp.status_code == 401 and problem_of(resp)["detail"] == "unknown or revoked API key"
    resp = client.post("/v1/match", json={"text": "x"}, headers={"Authorization": "Basic Zm9vOmJhcg=="})
    assert resp.status_code == 401


def test_read_key_cannot_write(client, read_key, api_corpus):
    headers = {"Authorization": f"Bearer {read_key}"}
    assert client.post("/v1/match", json={"text": "honey"}, headers=headers).status_code == 200
    resp = client.post("/v1/webhooks", json={"url": "http://127.0.0.1:1/x", "events": ["post.matched"]},
                       headers=headers)
    assert resp.status_code == 403 and "scope 'read'" in problem_of(resp)["detail"]


def test_revoked_key_is_401(client, api_services):
    record, key = api_services.keys.create("short-lived")
    headers = {"Authorization": f"Bearer {key}"}
    assert client.get("/v1/webhooks", headers=headers).status_code == 200
    api_services.keys.revoke(record.id)
    assert client.get("/v1/webhooks", headers=headers).status_code == 401


def test_rate_limit_is_429_with_retry_after(api_settings, store, embedder):
    from api import create_app
    from plugin.service.services import Services

    settings = api_settings.model_copy(update={"rate_limit_requests": 3, "rate_limit_window_s": 3600})
    app = create_app(settings, services=Services(settings, store=store, embedder=embedder))
    key = app.extensions["factsieve"].keys.create("limited")[1]
    client, headers = app.test_client(), {"Authorization": f"Bearer {key}"}
    codes = [client.get("/v1/webhooks", headers=headers).status_code for _ in range(3)]
    assert codes == [200, 200, 200]
    resp = client.get("/v1/webhooks", headers=headers)
    assert resp.status_code == 429
    assert 0 < int(resp.headers["Retry-After"]) <= 3600
    assert "more than 3 requests" in problem_of(resp)["detail"]
    # the 429 says which limit it hit, like every answer before it
    assert (resp.headers["RateLimit-Limit"], resp.headers["RateLimit-Remaining"]) == ("3", "0")
    assert resp.headers["RateLimit-Reset"] == resp.headers["Retry-After"]


# -- fact-checks ---------------------------------------------------------------------------------------
@pytest.fixture
def fc_client(api_settings, store, embedder, make_alias):
    """A client whose fact-check alias is this test's own."""
    from api import create_app
    from plugin.service.services import Services

    settings = api_settings.model_copy(update={"index": make_alias()})
    app = create_app(settings, services=Services(settings, store=store, embedder=embedder))
    return app.test_client()


def test_ingest_json_array_jsonl_and_claimreview(fc_client, auth):
    rows = [json.loads(line) for line in API_FACTCHECKS.read_text().splitlines()]
    resp = fc_client.post("/v1/fact-checks", json=rows[:3], headers=auth)
    assert resp.status_code == 200, resp.data
    assert resp.get_json() == {"indexed": 3, "updated": 0, "rejected": 0, "rejects": []}
    jsonl = "\n".join(json.dumps(r) for r in rows[2:5] + [{"id": "bad", "claim": ""}])
    resp = fc_client.post("/v1/fact-checks", data=jsonl.encode(),
                          headers={**auth, "Content-Type": "application/x-ndjson"})
    body = resp.get_json()
    assert (body["indexed"], body["updated"], body["rejected"]) == (2, 1, 1)
    assert body["rejects"][0]["record"] == "body:4" and "claim" in body["rejects"][0]["reason"]
    review = {"@context": "https://schema.org", "@type": "ClaimReview", "url": "https://checks.example.org/cr",
              "claimReviewed": "The moon is made of cheese.", "datePublished": "2020-01-01",
              "inLanguage": "en", "reviewRating": {"@type": "Rating", "alternateName": "False"},
              "author": {"@type": "Organization", "name": "Example Checks"}}
    resp = fc_client.post("/v1/fact-checks", data=json.dumps(review),
                          headers={**auth, "Content-Type": "application/ld+json"})
    assert resp.status_code == 200 and resp.get_json()["indexed"] == 1


def test_factcheck_get_delete(fc_client, auth):
    rows = [json.loads(line) for line in API_FACTCHECKS.read_text().splitlines()]
    fc_client.post("/v1/fact-checks", json=rows[:1], headers=auth)
    resp = fc_client.get("/v1/fact-checks/api-1", headers=auth)
    assert resp.status_code == 200
    body = resp.get_json()
    assert body["claim"] == rows[0]["claim"] and body["verdict"] == "Refuted" and "embedding" not in body
    assert fc_client.delete("/v1/fact-checks/api-1", headers=auth).status_code == 204
    resp = fc_client.get("/v1/fact-checks/api-1", headers=auth)
    assert resp.status_code == 404 and problem_of(resp)
    assert fc_client.delete("/v1/fact-checks/api-1", headers=auth).status_code == 404


@pytest.mark.parametrize("ingested", [True, False])  # an unknown id; no index behind the alias yet
def test_unknown_factcheck_404_names_the_id_not_the_index(fc_client, auth, ingested):
    if ingested:
        rows = [json.loads(line) for line in API_FACTCHECKS.read_text().splitlines()]
        assert fc_client.post("/v1/fact-checks", json=rows[:1], headers=auth).status_code == 200
    for resp in (fc_client.get("/v1/fact-checks/no-such-check", headers=auth),
                 fc_client.delete("/v1/fact-checks/no-such-check", headers=auth)):
        body = problem_of(resp)
        assert resp.status_code == 404 and body["detail"] == "no fact-check with id 'no-such-check'"
        # neither the physical index (fs-test-…-v1) nor OpenSearch's raw answer
        assert "fs-test" not in resp.get_data(as_text=True) and "_index" not in body["detail"]


def test_ingest_rejects(fc_client, auth):
    resp = fc_client.post("/v1/fact-checks", json=[{"claim": ""}, {"title": "no claim"}], headers=auth)
    assert resp.status_code == 422
    body = problem_of(resp)
    assert [e["field"] for e in body["errors"]] == ["body:1", "body:2"]
    resp = fc_client.post("/v1/fact-checks", data=b"\xff\xfe\x00garbage", headers={**auth, "Content-Type": "application/json"})
    assert resp.status_code == 400 and "UTF-8" in problem_of(resp)["detail"]
    resp = fc_client.post("/v1/fact-checks", data=b"  ", headers={**auth, "Content-Type": "application/json"})
    assert resp.status_code == 400
    resp = fc_client.post("/v1/fact-checks", data=b"a,b", headers={**auth, "Content-Type": "image/png"})
    assert resp.status_code == 415 and problem_of(resp)
    resp = fc_client.post("/v1/fact-checks?format=yaml", json=[], headers=auth)
    assert resp.status_code == 400 and "valid formats" in problem_of(resp)["detail"]

    # refused before anything is queued: nothing in these bodies can be a record
    for body, ctype, query in [(b"-5.5e16", "application/ld+json", "?async=true"), (b'"a string"', "application/json", ""),
                               (b"[1, 2]\n", "application/x-ndjson", "?async=true"), (b"[]", "application/json", ""),
                               (b"\x00", "application/json", "?format=csv"),
                               (b'[{"claim": ""}, {"claimReviewed": false}]', "application/json", "?async=true")]:
        resp = fc_client.post(f"/v1/fact-checks{query}", data=body, headers={**auth, "Content-Type": ctype})
        assert resp.status_code == 422, (body, resp.data)
        assert problem_of(resp)
    resp = fc_client.post("/v1/fact-checks?async=true", data=b"{oops", headers={**auth, "Content-Type": "application/ld+json"})
    assert resp.status_code == 400 and "not valid JSON" in problem_of(resp)["detail"]


def test_ingest_body_limit_is_413(api_settings, store, embedder, auth):
    from api import create_app
    from plugin.service.services import Services

    settings = api_settings.model_copy(update={"max_request_bytes": 2048})
    client = create_app(settings, services=Services(settings, store=store, embedder=embedder)).test_client()
    resp = client.post("/v1/fact-checks", json=[{"claim": "x" * 100}] * 40, headers=auth)
    assert resp.status_code == 413 and problem_of(resp)


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
    from plugin.service.outbound import backends_of

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
    from plugin.service.outbound import backends_of

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

    from plugin.service.outbound import backends_of
    from plugin.service.webhooks import DeliveryStatus, Event, WebhookStore, resolve_host

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


# -- bad input that once reached a 5xx (issue 11, point 4) -----------------------------------------
def test_a_record_with_an_absurd_date_is_rejected_alone(fc_client, auth):
    rows = [{"claim": f"claim {i}", "url": f"https://example.org/{i}", "published_at": v}
            for i, v in enumerate([1e300, 1e18, "Infinity", -1e300])]
    rows.append({"claim": "a good claim", "url": "https://example.org/good"})
    resp = fc_client.post("/v1/fact-checks", json=rows, headers=auth)
    body = resp.get_json()
    assert resp.status_code == 200 and body["indexed"] + body["updated"] == 1 and body["rejected"] == 4
    assert all("published_at" in r["reason"] for r in body["rejects"])


def test_window_before_year_one_and_huge_posts_answer(client, auth, api_corpus):
    resp = client.post("/v1/match", json={"text": "vaccines alter dna", "date": "0001-01-01",
                                          "within_days": 3650}, headers=auth)
    assert resp.status_code == 200 and resp.get_json()["matches"] == []
    words = " ".join(f"w{i}x" for i in range(4000))[:20000]  # distinct words: 1,024+ clauses once
    resp = client.post("/v1/match", json={"text": words}, headers=auth)
    assert resp.status_code in (200, 400, 413, 422), resp.data


@pytest.mark.parametrize("text", ["@" * 20000, "a@" * 10000, ("http://" * 3000)[:20000], "中" * 20000],
                         ids=["at", "a-at", "http", "han"])
def test_crafted_texts_answer_a_read_key(client, read_key, api_corpus, text):
    """Language detection once backtracked for ~48 minutes on "@" * 20000 (a worker held until
    gunicorn killed it); the others, one "word" of thousands of terms, made BM25 queries Lucene
    refused (502). The guard fails rather than hanging the suite."""
    with hang_guard(60):
        resp = client.post("/v1/match", json={"text": text},
                           headers={"Authorization": f"Bearer {read_key}"})
    assert resp.status_code == 200, resp.data


def test_ids_are_checked_before_they_name_a_redis_key(client, auth):
    job_id = "job_" + "0" * 24  # the shape of a real one
    for bad in (f"{job_id}:body", "job_x:body", "x" * 300, "job_" + "g" * 24):
        resp = client.get(f"/v1/jobs/{bad}", headers=auth)
        assert resp.status_code == 404 and problem_of(resp), bad
    for bad in ("webhook-ids", "whk_1:deliveries", "whk_" + "z" * 16):
        for path in (f"/v1/webhooks/{bad}", f"/v1/webhooks/{bad}/deliveries"):
            resp = client.get(path, headers=auth)
            assert resp.status_code == 404 and problem_of(resp), path
        assert client.delete(f"/v1/webhooks/{bad}", headers=auth).status_code == 404


def test_bodies_too_many_records_or_columns_are_4xx_at_once(fc_client, auth):
    body = ("[" + ",".join(["{}"] * 600_000) + "]").encode()
    resp = fc_client.post("/v1/fact-checks", data=body, headers={**auth, "Content-Type": "application/json"})
    assert resp.status_code == 400 and "split it" in problem_of(resp)["detail"]
    wide = (",".join(f"c{i}" for i in range(50_000)) + "\n" + ",".join("x" * 1 for _ in range(50_000))).encode()
    resp = fc_client.post("/v1/fact-checks", data=wide, headers={**auth, "Content-Type": "text/csv"})
    assert resp.status_code == 422 and "columns" in json.dumps(problem_of(resp))
    repeated = ("claim," * 900 + "url\n" + "a," * 900 + "b\n").encode()
    resp = fc_client.post("/v1/fact-checks", data=repeated, headers={**auth, "Content-Type": "text/csv"})
    assert resp.status_code == 422 and "repeats" in json.dumps(problem_of(resp))


# -- body limits: chunked or not, a body over the limit is refused whole ---------------------------
#: the limits of the `limited` deployment: JSON bodies, fact-check and evidence bodies
JSON_LIMIT, BODY_LIMIT = 1024, 4096


@pytest.fixture
def limited(api_settings, store, embedder):
    """A deployment of its own (Redis namespace, fact-check, evidence and jobs aliases) with small
    body limits, every body it may ingest ingested in the request: ``(client, auth, services)``."""
    from api import create_app
    from plugin.service.keys import Scope
    from plugin.service.services import Services
    from tests.integration.conftest import cleanup_deployment, namespaced

    settings = namespaced(api_settings, uuid.uuid4().hex[:10], max_json_bytes=JSON_LIMIT,
                          max_request_bytes=BODY_LIMIT, sync_ingest_max_bytes=BODY_LIMIT,
                          sync_evidence_max_passages=1000)
    svc = Services(settings, store=store, embedder=embedder)
    key = svc.keys.create("tests (limits)", Scope.WRITE)[1]
    yield create_app(settings, services=svc).test_client(), {"Authorization": f"Bearer {key}"}, svc
    cleanup_deployment(settings, store)


def chunked(client, path: str, body: bytes, ctype: str, headers: dict[str, str]):
    """POST ``body`` as gunicorn hands a ``Transfer-Encoding: chunked`` request to the app: no
    Content-Length, and the server marks the input as terminated."""
    return client.post(path, input_stream=io.BytesIO(body),
                       headers={**headers, "Content-Type": ctype, "Transfer-Encoding": "chunked"},
                       environ_overrides={"wsgi.input_terminated": True})


def padded(obj: object, limit: int) -> bytes:
    """Valid JSON past ``limit``: cut at the limit it is still valid, which is how a body read
    partially was taken for a whole one."""
    return json.dumps(obj).encode() + b" " * (limit + 10)


def ndjson(rows: list[dict], past: int) -> bytes:
    """JSON Lines of ``rows`` repeated (ids numbered) until longer than ``past`` bytes."""
    lines, i = [], 0
    while sum(len(line) + 1 for line in lines) <= past:
        row = {k: (f"{v}-{i}" if k in ("id", "url") else v) for k, v in rows[i % len(rows)].items()}
        lines.append(json.dumps(row))
        i += 1
    return "\n".join(lines).encode()


FACTCHECK = {"id": "limit", "claim": "A synthetic claim about rivers and their sources", "lang": "en"}
EVIDENCE = {"url": "https://limits.example.org/page", "title": "Rivers",
            "text": "Rivers rise in hills. They run to the sea.", "published_at": "2020-01-01"}


def deployment_state(svc) -> tuple[int, int, int, list]:
    """(job records in Redis, fact-checks, evidence passages, webhooks): what a request may write."""
    def docs(alias: str) -> int:
        if not svc.store.alias_indices(alias):
            return 0
        svc.store.refresh(alias)
        return svc.store.count(alias)

    jobs = [k for k in svc.kv.client.scan_iter(svc.kv.key("job", "*")) if not k.endswith(":body")]
    return len(jobs), docs(svc.settings.index), docs(svc.settings.evidence_index), svc.webhooks.list(None)


def test_chunked_bodies_over_the_limit_are_413_on_every_route_and_write_nothing(limited):
    client, auth, svc = limited
    svc.ensure_factcheck_index()
    over_json = [("/v1/match", {"text": "rivers"}), ("/v1/posts", {"id": "p-limit", "text": "rivers"}),
                 ("/v1/verify", {"claim": "Rivers run uphill", "config": "lookup"}),
                 ("/v1/rerank", {"text": "rivers"}),
                 ("/v1/webhooks", {"url": "http://127.0.0.1:9/hook", "events": ["post.matched"]})]
    cases = [(path, padded(obj, JSON_LIMIT), "application/json", "FACTSIEVE_MAX_JSON_BYTES")
             for path, obj in over_json]
    cases += [(path, ndjson([FACTCHECK], BODY_LIMIT), "application/x-ndjson", "FACTSIEVE_MAX_REQUEST_BYTES")
              for path in ("/v1/fact-checks", "/v1/fact-checks?async=true")]
    cases += [(path, ndjson([EVIDENCE], BODY_LIMIT), "application/x-ndjson", "FACTSIEVE_MAX_REQUEST_BYTES")
              for path in ("/v1/evidence", "/v1/evidence?async=true")]
    for path, body, ctype, setting in cases:
        for send in (chunked, lambda c, p, b, t, h: c.post(p, data=b, headers={**h, "Content-Type": t})):
            resp = send(client, path, body, ctype, auth)
            assert resp.status_code == 413, (path, resp.status_code, resp.data[:300])
            assert setting in problem_of(resp)["detail"], path
    assert deployment_state(svc) == (0, 0, 0, [])


def test_chunked_bodies_within_the_limit_are_read_whole(limited):
    client, auth, svc = limited
    resp = chunked(client, "/v1/fact-checks", ndjson([FACTCHECK], BODY_LIMIT - 200), "application/x-ndjson", auth)
    assert resp.status_code == 200, resp.data
    stored = resp.get_json()["indexed"]
    assert stored > 10 and resp.get_json()["rejected"] == 0  # every line, the last one too
    resp = chunked(client, "/v1/match", json.dumps({"text": "rivers and their sources", "k": 2}).encode(),
                   "application/json", auth)
    assert resp.status_code == 200 and len(resp.get_json()["matches"]) == 2
    resp = chunked(client, "/v1/evidence", ndjson([EVIDENCE], BODY_LIMIT - 300), "application/x-ndjson", auth)
    assert resp.status_code == 200, resp.data
    documents = resp.get_json()["documents"]
    assert documents > 10 and resp.get_json()["rejected"] == 0
    resp = chunked(client, "/v1/fact-checks?async=true", ndjson([FACTCHECK], 500), "application/x-ndjson", auth)
    assert resp.status_code == 202
    assert deployment_state(svc)[:3] == (1, stored, documents)


# -- evidence: passage caps before any write, jobs for large bodies, 422 for nothing valid ------------
def long_text(sentences: int) -> str:
    """``sentences`` sentences of 12 words: 10 to a 120-word passage, one shared with the next."""
    return " ".join(f"Sentence {i} says that rivers rise in hills and run to the sea." for i in range(sentences))


def evidence_body(*docs: dict) -> bytes:
    return "\n".join(json.dumps(d) for d in docs).encode()


@pytest.fixture
def capped(api_settings, store, embedder):
    """Like ``limited``, with passage caps of 2 per document and 4 per request."""
    from api import create_app
    from plugin.service.keys import Scope
    from plugin.service.services import Services
    from tests.integration.conftest import cleanup_deployment, namespaced

    settings = namespaced(api_settings, uuid.uuid4().hex[:10], max_passages_per_document=2,
                          max_passages_per_request=4)
    svc = Services(settings, store=store, embedder=embedder)
    key = svc.keys.create("tests (caps)", Scope.WRITE)[1]
    yield create_app(settings, services=svc).test_client(), {"Authorization": f"Bearer {key}"}, svc
    cleanup_deployment(settings, store)


def test_evidence_passage_caps_refuse_before_any_write(capped):
    from plugin.evidence.passages import split_document

    client, auth, svc = capped
    ndjson_h = {**auth, "Content-Type": "application/x-ndjson"}
    two, three = long_text(15), long_text(25)
    assert (len(split_document(two)), len(split_document(three))) == (2, 3)
    docs = [{"url": f"https://caps.example.org/{i}", "text": two} for i in range(3)]  # 6 passages > 4
    for query in ("", "?async=true"):
        resp = client.post(f"/v1/evidence{query}", data=evidence_body(*docs), headers=ndjson_h)
        assert resp.status_code == 413 and "FACTSIEVE_MAX_PASSAGES_PER_REQUEST" in problem_of(resp)["detail"]
    assert deployment_state(svc) == (0, 0, 0, [])
    # one document over its cap: rejected alone, the others indexed
    resp = client.post("/v1/evidence", headers=ndjson_h, data=evidence_body(
        docs[0], {"url": "https://caps.example.org/long", "text": three}))
    assert resp.status_code == 200, resp.data
    report = resp.get_json()
    assert (report["documents"], report["indexed"], report["rejected"]) == (1, 2, 1)
    assert report["rejects"][0]["record"] == "body:2"
    assert "FACTSIEVE_MAX_PASSAGES_PER_DOCUMENT" in report["rejects"][0]["reason"]
    assert deployment_state(svc)[2] == 2
    # the only document over its cap: nothing is accepted, so a 422 naming it
    resp = client.post("/v1/evidence", headers=ndjson_h,
                       data=evidence_body({"url": "https://caps.example.org/only", "text": three}))
    assert resp.status_code == 422
    assert [e["field"] for e in problem_of(resp)["errors"]] == ["body:1"]
    assert deployment_state(svc)[2] == 2


def test_evidence_with_no_valid_document_is_422_like_fact_checks(capped):
    client, auth, svc = capped
    body = b'not json\n{"url": "https://caps.example.org/x"}\n{"title": "no url"}\n'
    for path in ("/v1/evidence", "/v1/evidence?async=true"):
        resp = client.post(path, data=body, headers={**auth, "Content-Type": "application/x-ndjson"})
        assert resp.status_code == 422, (path, resp.data)
        problem = problem_of(resp)
        assert [e["field"] for e in problem["errors"]] == ["body:1", "body:2", "body:3"]
        assert "not JSON" in problem["errors"][0]["message"] and "no text" in problem["errors"][1]["message"]
    resp = client.post("/v1/evidence", data=b"\n \n", headers={**auth, "Content-Type": "application/x-ndjson"})
    assert resp.status_code == 400
    assert deployment_state(svc) == (0, 0, 0, [])


def test_fact_check_bodies_of_many_records_become_jobs(limited):
    """Small bodies of many records were embedded in the request (64 KiB of one-line claims is
    ~3,000 records, 12 s on 2 cores): past FACTSIEVE_SYNC_INGEST_MAX_RECORDS they are a job."""
    client, auth, svc = limited
    svc.settings.sync_ingest_max_records = 3
    ndjson_h = {**auth, "Content-Type": "application/x-ndjson"}
    rows = [json.dumps({"id": f"many-{i}", "claim": f"Claim {i} about rivers"}) for i in range(4)]
    resp = client.post("/v1/fact-checks", data="\n".join(rows[:3]).encode(), headers=ndjson_h)
    assert resp.status_code == 200 and resp.get_json()["indexed"] == 3
    body = "\n".join(rows).encode()
    resp = client.post("/v1/fact-checks", data=body, headers=ndjson_h)
    assert resp.status_code == 202, resp.data
    job = svc.jobs.get(resp.get_json()["job_id"])
    assert job["kind"] == "ingest" and svc.jobs.body(job["id"]).encode() == body
    bad = "\n".join(json.dumps({"id": f"bad-{i}"}) for i in range(4)).encode()  # no claim at all
    assert client.post("/v1/fact-checks", data=bad, headers=ndjson_h).status_code == 422


def test_large_evidence_bodies_become_jobs(limited):
    client, auth, svc = limited
    # this deployment's own settings object: bodies over 1 KiB, or of more than 3 passages, are jobs
    svc.settings.sync_evidence_max_passages, svc.settings.sync_ingest_max_bytes = 3, 1024
    ndjson_h = {**auth, "Content-Type": "application/x-ndjson"}
    docs = [{"url": f"https://jobs.example.org/{i}", "text": "Rivers run to the sea."} for i in range(4)]
    resp = client.post("/v1/evidence", data=evidence_body(*docs[:3]), headers=ndjson_h)
    assert resp.status_code == 200 and resp.get_json()["indexed"] == 3
    for query, body in [("", evidence_body(*docs)), ("?async=true", evidence_body(docs[0])),
                        ("", evidence_body(docs[0]) + b"\n" + b" " * 2000),
                        ("", evidence_body(docs[0]) + b"\n" + b" " * BODY_LIMIT)]:
        resp = client.post(f"/v1/evidence{query}", data=body, headers=ndjson_h)
        if len(body) > BODY_LIMIT:  # over the size limit: refused, never queued
            assert resp.status_code == 413
            continue
        assert resp.status_code == 202, (query, resp.data)
        job = svc.jobs.get(resp.get_json()["job_id"])
        assert job["kind"] == "evidence" and job["status"] == "queued"
        assert svc.jobs.body(job["id"]).encode() == body
    assert deployment_state(svc)[:3] == (3, 0, 3)
