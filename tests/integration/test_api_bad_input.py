"""The HTTP API against bad input that once reached a 5xx, bodies over the limit (chunked or not)
and evidence caps, through Flask's test client over the real OpenSearch and Redis."""
from __future__ import annotations

import io
import json
import uuid

import pytest

from tests.guards import hang_guard
from tests.integration.conftest import problem_of

pytestmark = pytest.mark.integration


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
                          sync_evidence_max_passages=1000, image_max_bytes=IMAGE_LIMIT)
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


IMAGE_LIMIT = 4 * 1024
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
    svc.factchecks.ensure()
    from plugin.image.inputs import image_body_bytes

    over_json = [("/v1/rerank", {"text": "rivers"}),
                 ("/v1/webhooks", {"url": "http://127.0.0.1:9/hook", "events": ["post.matched"]})]
    cases = [(path, padded(obj, JSON_LIMIT), "application/json", "FACTSIEVE_MAX_JSON_BYTES")
             for path, obj in over_json]
    # the routes that take an image allow a body that can hold one of FACTSIEVE_IMAGE_MAX_BYTES
    over_image = [("/v1/match", {"text": "rivers"}), ("/v1/posts", {"id": "p-limit", "text": "rivers"}),
                  ("/v1/verify", {"claim": "Rivers run uphill", "config": "lookup"})]
    cases += [(path, padded(obj, image_body_bytes(svc.settings)), "application/json",
               "FACTSIEVE_IMAGE_MAX_BYTES") for path, obj in over_image]
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
