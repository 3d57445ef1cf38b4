"""The HTTP API through Flask's test client, over the real OpenSearch and Redis: success shapes,
validation, auth, rate limits and error bodies (always application/problem+json)."""
from __future__ import annotations

import json

import pytest

from tests.integration.conftest import API_FACTCHECKS, problem_of

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
        if rule.endpoint == "static" or rule.endpoint.startswith("desk."):  # the page, not the API
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


def test_bad_bodies(client, auth, api_settings):
    from plugin.image.inputs import image_body_bytes

    resp = client.post("/v1/match", data=b"{not json", headers={**auth, "Content-Type": "application/json"})
    assert resp.status_code == 400 and "not valid JSON" in problem_of(resp)["detail"]
    resp = client.post("/v1/match", data=b"text=hello", headers={**auth, "Content-Type": "application/x-www-form-urlencoded"})
    assert resp.status_code == 415 and problem_of(resp)
    resp = client.post("/v1/rerank", json={"text": "x" * 300_000}, headers=auth)
    assert resp.status_code == 413 and problem_of(resp)["title"] == "Request Entity Too Large"
    # a route that takes an image allows a body that can hold one, and no more
    resp = client.post("/v1/match", json={"text": "x" * 300_000}, headers=auth)
    assert resp.status_code == 422 and "at most 20000 characters" in problem_of(resp)["detail"]
    resp = client.post("/v1/match", json={"image": "A" * image_body_bytes(api_settings)}, headers=auth)
    assert resp.status_code == 413 and "FACTSIEVE_IMAGE_MAX_BYTES" in problem_of(resp)["detail"]


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
