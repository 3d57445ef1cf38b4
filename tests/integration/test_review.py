"""The review queue and decision log end to end: posts matched by a real worker become review
items; decisions through the API over the real OpenSearch and Redis, with signed webhooks to a
local receiver, optimistic concurrency, tenants, bad input, and the export command."""
from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import sys
import uuid

import pytest
from plugin.search.result import Match

from tests.conftest import ROOT
from tests.integration.conftest import poll_job, problem_of, settings_env, wait_for

pytestmark = pytest.mark.integration

FIVE_G = "BREAKING: 5G masts are spreading the coronavirus!!"


@pytest.fixture
def tenant(api_services):
    """A fresh tenant per test, with keys: ``tenant.key(name, scope)`` → auth headers."""
    from plugin.service.keys import Scope

    name = f"rv-{uuid.uuid4().hex[:8]}"

    class Tenant:
        id = name

        def key(self, who: str = "ana", scope: Scope = Scope.WRITE, of: str | None = None) -> dict:
            _, key = api_services.keys.create(who, scope, of or name)
            return {"Authorization": f"Bearer {key}"}

    return Tenant()


def submit(client, headers, text: str = FIVE_G, **extra) -> str:
    """Post ``text``, wait for the worker to match it; the post's id."""
    post = {"id": f"rv-{uuid.uuid4().hex[:10]}", "text": text, "lang": "en",
            "date": "2020-05-01", "url": "https://social.example.com/p/1", **extra}
    resp = client.post("/v1/posts", json=post, headers=headers)
    assert resp.status_code == 202, resp.data
    job = poll_job(client, headers, resp.get_json()["job_id"])
    assert job["status"] == "succeeded", job
    return post["id"]


def queue(client, headers, **params) -> dict:
    resp = client.get("/v1/review", query_string=params, headers=headers)
    assert resp.status_code == 200, resp.data
    return resp.get_json()


def listed(client, headers, post_ids, **params) -> dict:
    """The queue once every one of ``post_ids`` is searchable (the refresh interval)."""
    def complete() -> dict | None:
        page = queue(client, headers, **params)
        return page if set(post_ids) <= {i["post_id"] for i in page["items"]} else None

    return wait_for(complete, timeout=10, what="the queue to list the posts")


def decide(client, headers, body):
    return client.post("/v1/review/decisions", json=body, headers=headers)


def signed_payload(receiver, path: str, sub: dict, event: str) -> dict:
    """The one delivery ``path`` received, once it has: signed with ``sub``'s secret, for
    ``event``; its JSON body."""
    (got,) = wait_for(lambda: receiver.received(path), what=f"the {event} webhook")
    headers, body = got["headers"], got["body"]
    mac = hmac.new(sub["secret"].encode(), headers["X-FactSieve-Timestamp"].encode() + b"." + body,
                   hashlib.sha256).hexdigest()
    assert headers["X-FactSieve-Signature"] == "sha256=" + mac
    assert headers["X-FactSieve-Event"] == event
    payload = json.loads(body)
    assert payload["event"] == event and payload["subscription_id"] == sub["id"]
    return payload


def test_a_matched_post_becomes_a_pending_item_with_its_candidates(client, worker, tenant):
    ana = tenant.key("ana")
    post_id = submit(client, ana, "<script>alert(1)</script> " + FIVE_G)
    item = client.get(f"/v1/review/{post_id}", headers=ana).get_json()
    assert item["status"] == "pending" and item["decisions"] == []
    assert item["text"] == "<script>alert(1)</script> " + FIVE_G  # stored verbatim: escaping is the page's
    assert (item["lang"], item["date"], item["source_url"]) == ("en", "2020-05-01", "https://social.example.com/p/1")
    assert 1 <= len(item["candidates"]) <= 5 and item["version"]
    top = item["candidates"][0]
    assert top["factcheck_id"] == "api-2" and top["rank"] == 1
    assert top["url"] == "https://checks.example.org/5g-coronavirus" and top["publisher"] == "Example Checks"
    assert set(top["signals"]) == {"bm25_rank", "knn_similarity", "reranked", "rerank_score", "found_by"}
    assert top["signals"]["found_by"] == [{"signal": "text"}]
    assert top["signals"]["bm25_rank"] is not None and top["signals"]["knn_similarity"] is not None
    assert item["versions"]["retrieval_config"] == item["config"]
    assert set(item["versions"]) == {"retrieval_config", "embedding_model", "query_tower", "reranker", "calibrator"}
    page = listed(client, ana, [post_id])
    assert page["counts"]["status"]["pending"] == 1 and page["counts"]["lang"] == {"en": 1}
    assert page["next"] is None and page["items"][0]["version"] == item["version"]


def test_confirm_records_actor_versions_signals_and_delivers_signed_match_confirmed(
        client, worker, tenant, receiver):
    ana = tenant.key("ana")
    path = f"/confirmed-{uuid.uuid4().hex[:8]}"
    sub = client.post("/v1/webhooks", headers=ana, json={
        "url": receiver.url(path), "events": ["match.confirmed", "match.rejected"]}).get_json()
    post_id = submit(client, ana)
    item = client.get(f"/v1/review/{post_id}", headers=ana).get_json()
    resp = decide(client, ana, {"post_id": post_id, "action": "confirm", "factcheck_id": "api-2",
                                "version": item["version"], "note": "<b>seen</b> twice"})
    assert resp.status_code == 201, resp.data
    (decision,) = resp.get_json()["decisions"]
    assert (decision["actor"], decision["action"], decision["origin"]) == ("ana", "confirm", "api")
    assert decision["factcheck_id"] == "api-2" and decision["note"] == "<b>seen</b> twice"
    assert decision["versions"] == item["versions"] and decision["rank"] == 1
    assert decision["signals"] == item["candidates"][0]["signals"]
    assert decision["confidence"] == item["candidates"][0]["confidence"]
    after = client.get(f"/v1/review/{post_id}", headers=ana).get_json()
    assert (after["status"], after["decided_by"]) == ("confirmed", "ana") and after["version"] != item["version"]
    assert [d["id"] for d in after["decisions"]] == [decision["id"]]
    post = client.get(f"/v1/posts/{post_id}", headers=ana).get_json()
    assert [d["id"] for d in post["decisions"]] == [decision["id"]]

    payload = signed_payload(receiver, path, sub, "match.confirmed")
    assert payload["data"]["decision"]["id"] == decision["id"]
    assert payload["data"]["post"]["id"] == post_id and payload["data"]["factcheck"]["factcheck_id"] == "api-2"
    client.delete(f"/v1/webhooks/{sub['id']}", headers=ana)


def test_bulk_reject_then_undo(client, worker, tenant, receiver):
    ana = tenant.key("ana")
    path = f"/rejected-{uuid.uuid4().hex[:8]}"
    sub = client.post("/v1/webhooks", headers=ana, json={
        "url": receiver.url(path), "events": ["match.rejected"]}).get_json()
    posts = [submit(client, ana), submit(client, ana, "Hot water with lemon cures covid")]
    resp = decide(client, ana, [{"post_id": p, "action": "reject"} for p in posts])
    assert resp.status_code == 201, resp.data
    assert [d["action"] for d in resp.get_json()["decisions"]] == ["reject", "reject"]
    page = listed(client, ana, posts, status="rejected")
    assert page["counts"]["status"]["rejected"] == 2 and page["counts"]["status"]["pending"] == 0
    wait_for(lambda: len(receiver.received(path)) == 2, what="two match.rejected webhooks")

    first = resp.get_json()["decisions"][0]
    undo = decide(client, ana, {"post_id": posts[0], "action": "undo"})
    assert undo.status_code == 201, undo.data
    (taken_back,) = undo.get_json()["decisions"]
    assert taken_back["supersedes"] == first["id"] and taken_back["to_status"] == "pending"
    item = client.get(f"/v1/review/{posts[0]}", headers=ana).get_json()
    assert item["status"] == "pending" and item["decided_by"] is None
    assert [d["action"] for d in item["decisions"]] == ["reject", "undo"]
    again = decide(client, ana, {"post_id": posts[0], "action": "undo"})  # nothing left to undo
    assert again.status_code == 422 and "pending" in problem_of(again)["detail"]
    assert decide(client, ana, {"post_id": posts[0], "action": "none"}).status_code == 201
    client.delete(f"/v1/webhooks/{sub['id']}", headers=ana)


def test_a_second_reviewer_gets_409_with_the_first_decision(client, worker, tenant, api_services):
    ana, bo = tenant.key("ana"), tenant.key("bo")
    post_id = submit(client, ana)
    seen = client.get(f"/v1/review/{post_id}", headers=bo).get_json()["version"]
    first = decide(client, ana, {"post_id": post_id, "action": "confirm", "version": seen})
    assert first.status_code == 201
    for late in ({"post_id": post_id, "action": "reject", "version": seen},
                 {"post_id": post_id, "action": "not_a_claim"}):
        resp = decide(client, bo, late)
        assert resp.status_code == 409, resp.data
        body = problem_of(resp)
        assert body["decision"]["actor"] == "ana" and body["decision"]["action"] == "confirm"
        assert body["decision"]["id"] == first.get_json()["decisions"][0]["id"]
    item = client.get(f"/v1/review/{post_id}", headers=bo).get_json()
    assert item["status"] == "confirmed" and len(item["decisions"]) == 1


def test_another_tenant_sees_none_of_it(client, worker, tenant):
    from plugin.service.keys import Scope

    ana = tenant.key("ana")
    post_id = submit(client, ana)
    listed(client, ana, [post_id])
    other = tenant.key("eve", Scope.WRITE, of=f"other-{uuid.uuid4().hex[:8]}")
    assert queue(client, other, status="any")["items"] == []
    assert sum(queue(client, other, status="any")["counts"]["status"].values()) == 0
    resp = client.get(f"/v1/review/{post_id}", headers=other)
    assert resp.status_code == 404 and post_id in problem_of(resp)["detail"]
    resp = decide(client, other, {"post_id": post_id, "action": "confirm"})
    assert resp.status_code == 404
    assert client.get(f"/v1/posts/{post_id}", headers=other).status_code == 404
    assert client.get(f"/v1/review/{post_id}", headers=ana).get_json()["status"] == "pending"


def test_bad_input_is_a_4xx_that_names_the_problem_and_writes_nothing(client, worker, tenant, api_services):
    from plugin.service.keys import Scope

    ana = tenant.key("ana")
    post_id, other_id = submit(client, ana), submit(client, ana, "Lightning never strikes twice")
    ok = {"post_id": post_id, "action": "confirm"}
    shown = {c["factcheck_id"] for c in client.get(f"/v1/review/{post_id}", headers=ana).get_json()["candidates"]}
    elsewhere = next(f"api-{i}" for i in range(1, 9) if f"api-{i}" not in shown)  # in the corpus, not shown
    cases = [
        ({"post_id": "never-posted", "action": "confirm"}, 404, "never-posted"),
        ({"post_id": post_id, "action": "approve"}, 422, "approve"),
        ({"post_id": post_id, "action": "confirm", "factcheck_id": elsewhere}, 422, "not a candidate"),
        ({"post_id": post_id, "action": "manual", "factcheck_id": "no-such-fc"}, 404, "no-such-fc"),
        ({"post_id": post_id, "action": "manual"}, 422, "manual names the fact-check"),
        ({"post_id": post_id, "action": "none", "factcheck_id": "api-2"}, 422, "takes no fact-check"),
        ({"post_id": post_id, "action": "undo"}, 422, "pending"),
        ({"post_id": post_id, "action": "confirm", "note": "x" * 2001}, 422, "FACTSIEVE_REVIEW_NOTE_MAX_CHARS"),
        ({"post_id": post_id, "action": "confirm", "colour": "red"}, 422, "unknown field"),
        ({"post_id": post_id, "action": "confirm", "version": "999999999:99"}, 409, "changed since"),
        ([ok, ok], 422, "decided twice"),
        ([{"post_id": other_id, "action": "reject"}, {"post_id": post_id, "action": "nope"}], 422, "nope"),
        ([{"post_id": other_id, "action": "reject"}, {"post_id": "never-posted", "action": "reject"}], 404, "never-posted"),
        ([ok] * 201, 413, "FACTSIEVE_REVIEW_BULK_MAX"),
        ([], 422, "at least one"),
        ("confirm", 422, "must be an object"),
    ]
    for body, status, words in cases:
        resp = decide(client, ana, body)
        assert resp.status_code == status, (body if len(str(body)) < 300 else status, resp.data[:300])
        assert words in json.dumps(problem_of(resp)), (words, problem_of(resp))
    resp = client.post("/v1/review/decisions", data="{not json", headers={**ana, "Content-Type": "application/json"})
    assert resp.status_code == 400
    resp = client.post("/v1/review/decisions", data="x", headers={**ana, "Content-Type": "text/plain"})
    assert resp.status_code == 415
    reader = tenant.key("rita", Scope.READ)
    assert decide(client, reader, ok).status_code == 403
    for params, status in [({"sort": "random"}, 422), ({"limit": "0"}, 400), ({"limit": "201"}, 400),
                           ({"min_confidence": "2"}, 400), ({"min_confidence": "nan"}, 400),
                           ({"min_confidence": "0.9", "max_confidence": "0.1"}, 422),
                           ({"cursor": "garbage!"}, 422), ({"status": "bogus"}, 422),
                           ({"since": "yesterday"}, 422), ({"colour": "red"}, 400)]:
        resp = client.get("/v1/review", query_string=params, headers=ana)
        assert resp.status_code == status, (params, resp.data)
        problem_of(resp)
    assert client.get("/v1/review/never-posted", headers=ana).status_code == 404
    # nothing was written: both items pending, no decision anywhere
    for pid in (post_id, other_id):
        item = client.get(f"/v1/review/{pid}", headers=ana).get_json()
        assert item["status"] == "pending" and item["decisions"] == []
    assert list(api_services.review.export(tenant.id)) == []


def test_manual_match_pagination_and_export(client, worker, tenant, api_services):
    ana = tenant.key("ana")
    posts = [submit(client, ana, FIVE_G + f" ({i})") for i in range(3)]
    listed(client, ana, posts)
    first = queue(client, ana, limit=2, sort="oldest")
    assert len(first["items"]) == 2 and first["next"]
    rest = queue(client, ana, limit=2, sort="oldest", cursor=first["next"])
    assert [i["post_id"] for i in first["items"] + rest["items"]] == posts and rest["next"] is None
    found = api_services.review.search_factchecks(tenant.id, "the Great Wall seen from the Moon", k=3)
    assert found[0]["factcheck_id"] == "api-3"
    shown = {c["factcheck_id"] for c in client.get(f"/v1/review/{posts[0]}", headers=ana).get_json()["candidates"]}
    elsewhere = next(f"api-{i}" for i in range(1, 9) if f"api-{i}" not in shown)
    resp = decide(client, ana, [{"post_id": posts[0], "action": "manual", "factcheck_id": elsewhere},
                                {"post_id": posts[1], "action": "confirm"},
                                {"post_id": posts[2], "action": "not_a_claim"}])
    assert resp.status_code == 201, resp.data
    manual = resp.get_json()["decisions"][0]
    assert manual["factcheck_id"] == elsewhere and manual["rank"] is None and manual["signals"] == {}
    assert decide(client, ana, {"post_id": posts[1], "action": "undo"}).status_code == 201
    assert decide(client, ana, {"post_id": posts[1], "action": "reject", "factcheck_id": "api-2"}).status_code == 201

    out = subprocess.run([sys.executable, "-m", "cli.main", "decisions", "export", "--tenant", tenant.id,
                          "--format", "jsonl"], cwd=ROOT, env=settings_env(api_services.settings),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    pairs = [json.loads(line) for line in out.stdout.splitlines()]
    # the manual match is a positive; the undone confirm is gone; the reject a negative; not_a_claim nothing
    assert [(p["post_id"], p["factcheck_id"], p["label"]) for p in pairs] == [
        (posts[0], elsewhere, 1), (posts[1], "api-2", 0)]
    assert pairs[1]["signals"]["bm25_rank"] is not None and pairs[1]["versions"]["retrieval_config"]
    assert pairs[0]["post_text"] == FIVE_G + " (0)"
    later = subprocess.run([sys.executable, "-m", "cli.main", "decisions", "export", "--tenant", tenant.id,
                            "--since", "2999-01-01"], cwd=ROOT, env=settings_env(api_services.settings),
                           capture_output=True, text=True, timeout=120)
    assert later.returncode == 0 and later.stdout == ""
    bad = subprocess.run([sys.executable, "-m", "cli.main", "decisions", "export", "--tenant", tenant.id,
                          "--since", "soon"], cwd=ROOT, env=settings_env(api_services.settings),
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--since" in bad.stderr


def test_a_post_without_candidates_is_an_item_that_takes_none_not_a_claim_or_manual(client, worker, tenant):
    ana = tenant.key("ana")
    # posted in year one, before every fact-check: the matcher finds none, the post is still queued
    bare = submit(client, ana, FIVE_G, date="0001-01-01")
    scored = submit(client, ana)
    item = client.get(f"/v1/review/{bare}", headers=ana).get_json()
    assert (item["status"], item["candidates"], item["confidence"]) == ("pending", [], None)
    for action in ("confirm", "reject"):
        resp = decide(client, ana, {"post_id": bare, "action": action})
        assert resp.status_code == 422 and "without candidates" in problem_of(resp)["detail"], resp.data
    # sorted after every scored item; no confidence filter or band selects it
    page = listed(client, ana, [bare, scored], sort="confidence")
    assert [i["post_id"] for i in page["items"]] == [scored, bare]
    assert sum(page["counts"]["confidence"].values()) == 1
    assert [i["post_id"] for i in queue(client, ana, min_confidence=0)["items"]] == [scored]
    top = page["items"][0]["confidence"]
    assert [i["post_id"] for i in queue(client, ana, max_confidence=top)["items"]] == [scored]
    assert decide(client, ana, {"post_id": bare, "action": "none"}).status_code == 201
    assert client.get(f"/v1/review/{bare}", headers=ana).get_json()["status"] == "no_match"
    assert decide(client, ana, {"post_id": bare, "action": "undo"}).status_code == 201
    assert decide(client, ana, {"post_id": bare, "action": "not_a_claim"}).status_code == 201
    assert decide(client, ana, {"post_id": bare, "action": "undo"}).status_code == 201
    resp = decide(client, ana, {"post_id": bare, "action": "manual", "factcheck_id": "api-2"})
    assert resp.status_code == 201, resp.data
    (manual,) = resp.get_json()["decisions"]
    assert (manual["to_status"], manual["rank"], manual["candidates"]) == ("confirmed", None, [])


def test_tenant_rules_decide_which_posts_become_items(api_services, api_corpus, tmp_path):
    """The post job's real path (match, learning, ``record_item``) under a rules file: a tenant
    that queues Spanish posts only gets no item for an English one, a tenant with ``queue:
    false`` none at all, and a tenant the file does not name gets both."""
    from plugin.errors import NotFound
    from plugin.service.handlers import run_post
    from plugin.service.services import Services

    tag = uuid.uuid4().hex[:8]
    spanish, off, other = f"rules-es-{tag}", f"rules-off-{tag}", f"rules-any-{tag}"
    path = tmp_path / "rules.json"
    path.write_text(json.dumps({"tenants": {spanish: {"langs": ["es"]}, off: {"queue": False}}}))
    settings = api_services.settings.model_copy(update={"review_rules_path": str(path)})
    svc = Services(settings, store=api_services.store, embedder=api_services.embedder)
    posts = {"en": {"id": f"rules-en-{tag}", "text": FIVE_G, "lang": "en"},
             "es": {"id": f"rules-es-{tag}", "text": "Las antenas 5G propagan el coronavirus", "lang": "es"}}

    def item(tenant: str, post: dict) -> dict | None:
        run_post(svc, {"id": f"job-{tenant}-{post['id']}", "tenant": tenant, "input": {"post": post}},
                 lambda delivery_id: None)
        try:
            return svc.review.item(tenant, post["id"]).to_dict()
        except NotFound:
            return None

    assert item(spanish, posts["en"]) is None
    assert item(spanish, posts["es"])["lang"] == "es"
    assert item(off, posts["en"]) is None and item(off, posts["es"]) is None
    assert item(other, posts["en"])["status"] == "pending"
    assert item(other, posts["es"])["status"] == "pending"


def test_undo_delivers_a_signed_match_undone_naming_the_decision_it_took_back(client, worker, tenant, receiver):
    from plugin.service.keys import Scope

    ana, bo = tenant.key("ana"), tenant.key("bo")
    path, elsewhere = f"/undone-{uuid.uuid4().hex[:8]}", f"/undone-other-{uuid.uuid4().hex[:8]}"
    sub = client.post("/v1/webhooks", headers=ana, json={
        "url": receiver.url(path), "events": ["match.undone"]}).get_json()
    eve = tenant.key("eve", Scope.WRITE, of=f"other-{uuid.uuid4().hex[:8]}")
    other = client.post("/v1/webhooks", headers=eve, json={
        "url": receiver.url(elsewhere), "events": ["match.undone"]}).get_json()
    post_id = submit(client, ana)
    (confirm,) = decide(client, ana, {"post_id": post_id, "action": "confirm"}).get_json()["decisions"]
    resp = decide(client, bo, {"post_id": post_id, "action": "undo"})
    assert resp.status_code == 201, resp.data
    (undo,) = resp.get_json()["decisions"]

    data = signed_payload(receiver, path, sub, "match.undone")["data"]
    assert (data["decision"]["id"], data["decision"]["actor"]) == (undo["id"], "bo")
    assert data["undone"] == {k: confirm[k] for k in ("id", "action", "factcheck_id", "actor", "at", "origin")}
    assert data["undone"]["actor"] == "ana" and data["factcheck"]["factcheck_id"] == confirm["factcheck_id"]
    assert data["post"]["id"] == post_id
    assert receiver.received(elsewhere) == []  # another tenant's subscription hears nothing
    client.delete(f"/v1/webhooks/{sub['id']}", headers=ana)
    client.delete(f"/v1/webhooks/{other['id']}", headers=eve)


def desk_signin(client, headers: dict) -> None:
    """Sign the test client in to the desk with the key in ``headers`` (its session cookie)."""
    import re

    page = client.get("/desk/signin").get_data(as_text=True)
    token = re.search(r'name="signin_token" value="([^"]+)"', page).group(1)
    key = headers["Authorization"].removeprefix("Bearer ")
    resp = client.post("/desk/signin", data={"signin_token": token, "api_key": key, "next": "/desk/"})
    assert resp.status_code == 303, resp.data[:300]


def test_the_history_lists_decided_items_newest_decided_first(client, worker, tenant):
    ana = tenant.key("ana")
    posts = [submit(client, ana, FIVE_G + f" [{i}]") for i in range(4)]
    listed(client, ana, posts)
    for i in (0, 2, 1):  # decided in this order, one request each; posts[3] stays pending
        assert decide(client, ana, {"post_id": posts[i], "action": "confirm"}).status_code == 201
    by_decision = [i["post_id"] for i in queue(client, ana, status="any", sort="decided")["items"]]
    assert by_decision == [posts[1], posts[2], posts[0], posts[3]]
    first = queue(client, ana, status="confirmed", sort="decided", limit=2)
    rest = queue(client, ana, status="confirmed", sort="decided", limit=2, cursor=first["next"])
    assert [i["post_id"] for i in first["items"] + rest["items"]] == [posts[1], posts[2], posts[0]]

    desk_signin(client, ana)
    page = client.get("/desk/history").get_data(as_text=True)  # its default order
    assert sorted(posts[:3], key=page.index) == [posts[1], posts[2], posts[0]]
    page = client.get("/desk/history?sort=oldest").get_data(as_text=True)
    assert sorted(posts[:3], key=page.index) == posts[:3]


def test_the_export_streams_in_pages_with_the_same_pairs(api_services):
    """More decisions than a page: the paged export gives exactly the pairs of the whole log read
    at once and sorted by (at, id), undone decisions and their undos left out."""
    from plugin.review.model import training_pairs
    from plugin.review.records import Decision

    desk, tenant = api_services.review, f"rv-export-{uuid.uuid4().hex[:8]}"
    posts = [f"exp-{i}" for i in range(7)]
    for i, post_id in enumerate(posts):
        matches = [{"id": f"fc-{i}-{r}", "claim": f"claim {r}", "rank": r, "score": 1 / r,
                    "confidence": 0.9 / r, "explain": {"bm25:post": {"rank": r, "score": 1.0}}}
                   for r in (1, 2, 3)]
        desk.record_item(tenant, post_id, f"post {i}", "en", None, None,
                         Match.from_dict({"matches": matches, "config": "t"}, {"retrieval_config": "t"}))
    # one bulk list (one ``at``: ties broken by id), then undos and new decisions on some
    desk.decide(tenant, "ana", [{"post_id": p, "action": "confirm", "factcheck_id": f"fc-{i}-2"}
                                for i, p in enumerate(posts)])
    desk.decide(tenant, "bo", [{"post_id": posts[2], "action": "undo"}, {"post_id": posts[5], "action": "undo"}])
    desk.decide(tenant, "bo", [{"post_id": posts[2], "action": "reject"}])
    desk.decide(tenant, "bo", [{"post_id": posts[2], "action": "undo"}])
    log = sorted((h["_source"] for h in api_services.store.scan(
        api_services.settings.decisions_index, {"query": {"term": {"tenant": tenant}}})),
        key=lambda d: (d["at"], d["id"]))
    assert len(log) == 11
    gone = {d["supersedes"] for d in log if d["supersedes"]} | {d["id"] for d in log if d["supersedes"]}
    expected = [pair for d in log if d["id"] not in gone for pair in training_pairs(Decision.from_source(d))]
    assert len(expected) == 10  # five confirms kept, each a positive and a negative above it
    assert list(desk.export(tenant, page_size=2)) == expected
    assert list(desk.export(tenant, page_size=3)) == list(desk.export(tenant)) == expected
    assert list(desk.export(tenant, since="2999-01-01", page_size=2)) == []
