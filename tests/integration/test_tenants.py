"""Tenants (issue 11, point 1): keys belong to a tenant and carry a scope; jobs, posts, webhook
subscriptions and delivery logs are the tenant's own; the fact-check corpus is shared, and
(issue 21) each fact-check and evidence document is changed only by its owner or an admin."""
import json
import uuid

import pytest

from plugin.service import handlers
from plugin.service.keys import Scope
from plugin.service.webhooks import Event
from tests.integration.conftest import poll_job, problem_of

pytestmark = pytest.mark.integration


@pytest.fixture
def fc_client(api_settings, store, embedder, make_alias):
    """A client whose fact-check alias is this test's own."""
    from api import create_app
    from plugin.service.services import Services

    settings = api_settings.model_copy(update={"index": make_alias()})
    return create_app(settings, services=Services(settings, store=store, embedder=embedder)).test_client()


@pytest.fixture(scope="module")
def keys(api_services):
    tag = uuid.uuid4().hex[:6]

    def make(tenant: str, scope: Scope) -> dict[str, str]:
        _, key = api_services.keys.create(f"{tenant} {scope.value}", scope, f"{tenant}-{tag}")
        return {"Authorization": f"Bearer {key}"}

    return {"a": make("a", Scope.WRITE), "b": make("b", Scope.WRITE), "b-read": make("b", Scope.READ),
            "admin": make("ops", Scope.ADMIN), "tag": tag}


def test_keys_carry_tenant_and_scope(api_services):
    record, key = api_services.keys.create("newsroom")
    assert record.scope is Scope.READ and record.tenant == "default"  # the defaults
    found = api_services.keys.authenticate(key)
    assert (found.tenant, found.scope, found.sees) == ("default", Scope.READ, "default")
    admin, key = api_services.keys.create("ops", Scope.ADMIN, "ops")
    assert api_services.keys.authenticate(key).sees is None
    assert Scope.ADMIN.allows(Scope.WRITE) and not Scope.READ.allows(Scope.WRITE)


def test_jobs_and_posts_are_the_tenants_own(client, keys):
    job = client.post("/v1/rerank", json={"text": "5G towers spread the virus"}, headers=keys["a"])
    job_id = job.get_json()["job_id"]
    assert client.get(f"/v1/jobs/{job_id}", headers=keys["a"]).status_code == 200
    other = client.get(f"/v1/jobs/{job_id}", headers=keys["b"])
    assert other.status_code == 404 and problem_of(other)  # the same answer as for no such job
    assert client.get(f"/v1/jobs/{job_id}", headers=keys["admin"]).status_code == 200

    post = {"id": f"shared-{uuid.uuid4().hex[:8]}", "text": "Drinking bleach cures covid", "lang": "en"}
    first = client.post("/v1/posts", json=post, headers=keys["a"]).get_json()
    # the same post id from another tenant is that tenant's own post, not a conflict or a block
    other = client.post("/v1/posts", json={**post, "text": "something else entirely"}, headers=keys["b"])
    assert other.status_code == 202 and other.get_json()["duplicate"] is False
    assert other.get_json()["job_id"] != first["job_id"]
    assert client.get(f"/v1/posts/{post['id']}", headers=keys["a"]).get_json()["id"] == first["job_id"]


def test_the_default_tenant_cannot_squat_another_tenants_post_ids(client, auth, keys, api_services):
    """Issue 21 (medium 5): ``"<tenant>\x1f<id>"`` from a default-tenant key once hashed like
    tenant a's ``<id>``: a 202 there told whether a used the id and blocked it for good."""
    tenant_a = f"a-{keys['tag']}"
    post_id = f"p-{uuid.uuid4().hex[:8]}"
    squat = client.post("/v1/posts", json={"id": f"{tenant_a}\x1f{post_id}", "text": "squatted",
                                           "lang": "en"}, headers=auth)
    assert squat.status_code == 422 and problem_of(squat)["errors"][0]["field"] == "id"
    assert "control characters" in problem_of(squat)["errors"][0]["message"]
    # below the API's schema too: the job ids no longer collide
    api_services.jobs.submit_post({"id": f"{tenant_a}\x1f{post_id}", "text": "squatted", "lang": "en"})
    own = client.post("/v1/posts", json={"id": post_id, "text": "Drinking bleach cures covid",
                                         "lang": "en"}, headers=keys["a"])
    assert own.status_code == 202 and own.get_json()["duplicate"] is False
    assert client.get(f"/v1/posts/{post_id}", headers=keys["a"]).get_json()["id"] == own.get_json()["job_id"]


def test_webhooks_and_their_logs_are_the_tenants_own(client, keys, receiver):
    hook = {"url": receiver.url("/tenants"), "events": ["post.matched"], "languages": ["ko"], "min_score": 999.5}
    a = client.post("/v1/webhooks", json=hook, headers=keys["a"]).get_json()
    b = client.post("/v1/webhooks", json=hook, headers=keys["b"]).get_json()
    listed_a = {w["id"] for w in client.get("/v1/webhooks", headers=keys["a"]).get_json()["webhooks"]}
    assert a["id"] in listed_a and b["id"] not in listed_a
    listed_admin = {w["id"] for w in client.get("/v1/webhooks", headers=keys["admin"]).get_json()["webhooks"]}
    assert {a["id"], b["id"]} <= listed_admin
    for path in (f"/v1/webhooks/{a['id']}", f"/v1/webhooks/{a['id']}/deliveries"):
        assert client.get(path, headers=keys["b"]).status_code == 404
    assert client.delete(f"/v1/webhooks/{a['id']}", headers=keys["b"]).status_code == 404
    assert client.post(f"/v1/webhooks/{a['id']}/secret", headers=keys["b"]).status_code == 404
    assert client.post("/v1/webhooks", json=hook, headers=keys["b-read"]).status_code == 403
    for sub in (a, b):
        assert client.delete(f"/v1/webhooks/{sub['id']}", headers=keys["admin"]).status_code == 204


def test_a_post_is_delivered_only_to_its_tenants_subscriptions(api_services, api_corpus, keys, receiver):
    tag = keys["tag"]
    webhooks = api_services.webhooks
    subs = {t: webhooks.create(receiver.url(f"/deliver-{t}"), [Event.POST_MATCHED], owner=f"{t}-{tag}")
            for t in ("a", "b")}
    try:
        job, _ = api_services.jobs.submit_post(
            {"id": f"p-{uuid.uuid4().hex[:8]}", "text": "The new Covid-19 vaccines alter your DNA",
             "lang": "en"}, f"a-{tag}")
        planned: list[str] = []
        result = handlers.run_post(api_services, job, planned.append)
        assert result["deliveries"] and len(planned) == len(result["deliveries"]) == 1
        assert webhooks.delivery(planned[0])["subscription_id"] == subs["a"]["id"]
    finally:
        for sub in subs.values():
            webhooks.delete(sub["id"])


def test_the_fact_check_corpus_is_shared_and_writing_needs_write_scope(fc_client, keys):
    row = {"claim": f"A shared claim {uuid.uuid4().hex[:6]}", "url": "https://example.org/shared"}
    assert fc_client.post("/v1/fact-checks", json=[row], headers=keys["b-read"]).status_code == 403
    resp = fc_client.post("/v1/fact-checks", json=[row], headers=keys["a"])
    assert resp.status_code == 200
    found = fc_client.post("/v1/match", json={"text": row["claim"], "k": 3}, headers=keys["b-read"])
    assert found.status_code == 200 and row["claim"] in [m["claim"] for m in found.get_json()["matches"]]


# -- issue 21, point 7: the shared corpus is readable by all, changed only by its owner ----------
def _fc(tag: str, rating: str) -> dict[str, str]:
    return {"id": f"owned-{tag}", "claim": f"Owned claim {tag} about tidal power", "lang": "en",
            "rating": rating, "url": f"https://example.org/owned/{tag}"}


def test_only_the_owner_or_an_admin_changes_a_fact_check(fc_client, keys):
    tag = uuid.uuid4().hex[:8]
    mine, other = _fc(tag, "False"), _fc(tag + "-b", "Mixed")
    assert fc_client.post("/v1/fact-checks", json=[mine], headers=keys["a"]).get_json()["indexed"] == 1
    path = f"/v1/fact-checks/{mine['id']}"

    # B's batch: A's record is rejected, naming why; B's own record is ingested all the same
    report = fc_client.post("/v1/fact-checks", json=[{**mine, "rating": "True"}, other],
                            headers=keys["b"]).get_json()
    assert (report["indexed"], report["updated"], report["rejected"]) == (1, 0, 1)
    assert f"fact-check {mine['id']} belongs to another tenant" in report["rejects"][0]["reason"]
    assert fc_client.get(path, headers=keys["b"]).get_json()["rating"] == "False"
    resp = fc_client.delete(path, headers=keys["b"])
    assert resp.status_code == 403 and "belongs to another tenant" in problem_of(resp)["detail"]
    assert fc_client.get(path, headers=keys["b"]).status_code == 200  # still readable by all

    # the owner updates it; an admin updates it too, and it stays A's
    report = fc_client.post("/v1/fact-checks", json=[{**mine, "rating": "Mostly false"}],
                            headers=keys["a"]).get_json()
    assert (report["updated"], report["rejected"]) == (1, 0)
    report = fc_client.post("/v1/fact-checks", json=[{**mine, "rating": "Misleading"}],
                            headers=keys["admin"]).get_json()
    assert (report["updated"], report["rejected"]) == (1, 0)
    stored = fc_client.get(path, headers=keys["a"]).get_json()
    assert (stored["rating"], stored["owner"]) == ("Misleading", f"a-{keys['tag']}")
    seen_by_b = fc_client.get(path, headers=keys["b"]).get_json()  # no other tenant's name
    assert seen_by_b["rating"] == "Misleading" and "owner" not in seen_by_b
    assert fc_client.post("/v1/fact-checks", json=[{**mine, "rating": "True"}],
                          headers=keys["b"]).status_code == 422  # every record refused

    # the owner deletes its own; an admin deletes another's; absent is 404
    assert fc_client.delete(path, headers=keys["a"]).status_code == 204
    assert fc_client.delete(path, headers=keys["a"]).status_code == 404
    assert fc_client.delete(f"/v1/fact-checks/{other['id']}", headers=keys["admin"]).status_code == 204


def test_a_fact_check_stored_without_an_owner_is_defaults(fc_client, keys, api_services, store):
    # an old document: written before owners were recorded
    fc_client.post("/v1/fact-checks", json=[{"claim": "bootstrap the alias"}], headers=keys["a"])
    alias = fc_client.application.extensions["factsieve"].settings.index
    doc = _fc(uuid.uuid4().hex[:8], "False")
    store.put(alias, doc["id"], doc, refresh=True)
    report = fc_client.post("/v1/fact-checks", json=[{**doc, "rating": "True"}], headers=keys["a"])
    assert report.status_code == 422 and "belongs to another tenant" in json_of(report)
    assert fc_client.delete(f"/v1/fact-checks/{doc['id']}", headers=keys["a"]).status_code == 403

    _, key = api_services.keys.create("a default-tenant key", Scope.WRITE)  # tenant default
    default = {"Authorization": f"Bearer {key}"}
    report = fc_client.post("/v1/fact-checks", json=[{**doc, "rating": "True"}], headers=default)
    assert (report.get_json()["updated"], report.get_json()["rejected"]) == (1, 0)
    assert fc_client.get(f"/v1/fact-checks/{doc['id']}", headers=default).get_json()["owner"] == "default"
    assert fc_client.delete(f"/v1/fact-checks/{doc['id']}", headers=default).status_code == 204


def json_of(resp) -> str:
    return resp.get_data(as_text=True)


def test_an_async_ingest_job_writes_as_its_submitter(client, keys, worker):
    tag = uuid.uuid4().hex[:8]
    mine = _fc(tag, "False")
    assert client.post("/v1/fact-checks", json=[mine], headers=keys["a"]).get_json()["indexed"] == 1
    resp = client.post("/v1/fact-checks?async=true", json=[{**mine, "rating": "True"}, _fc(tag + "-b", "True")],
                       headers=keys["b"])
    assert resp.status_code == 202
    job = poll_job(client, keys["b"], resp.get_json()["job_id"])
    assert job["status"] == "succeeded", job
    assert (job["result"]["indexed"], job["result"]["rejected"]) == (1, 1)
    assert "belongs to another tenant" in job["result"]["rejects"][0]["reason"]
    assert client.get(f"/v1/fact-checks/{mine['id']}", headers=keys["b"]).get_json()["rating"] == "False"

    resp = client.post("/v1/fact-checks?async=true", json=[{**mine, "rating": "Mostly false"}], headers=keys["a"])
    job = poll_job(client, keys["a"], resp.get_json()["job_id"])
    assert (job["result"]["updated"], job["result"]["rejected"]) == (1, 0), job
    assert client.get(f"/v1/fact-checks/{mine['id']}", headers=keys["a"]).get_json()["rating"] == "Mostly false"
    for doc_id in (mine["id"], f"owned-{tag}-b"):
        assert client.delete(f"/v1/fact-checks/{doc_id}", headers=keys["admin"]).status_code == 204


def test_evidence_documents_are_their_owners(fc_client, keys, store):
    url = f"https://example.org/evidence/{uuid.uuid4().hex[:8]}"
    doc = {"url": url, "title": "Tidal power output", "text": "The tidal plant produced 240 MW at peak. "
                                                              "It opened in 1966 in Brittany."}
    headers = {"Content-Type": "application/x-ndjson"}

    def send(key: str, text: str):
        body = json.dumps({**doc, "text": text}) + "\n"
        return fc_client.post("/v1/evidence", data=body, headers={**headers, **keys[key]})

    first = send("a", doc["text"]).get_json()
    assert first["indexed"] >= 1 and first["rejected"] == 0
    theirs = send("b", "Tidal power is a hoax. Nothing was ever built.").get_json()
    assert (theirs["indexed"], theirs["updated"], theirs["rejected"]) == (0, 0, 1)
    assert "belongs to another tenant" in theirs["rejects"][0]["reason"]
    assert send("a", doc["text"] + " Its output is still 240 MW.").get_json()["updated"] >= 1
    assert send("admin", doc["text"]).get_json()["rejected"] == 0

    alias = fc_client.application.extensions["factsieve"].settings.evidence_index
    store.refresh(alias)
    hits = store.search(alias, {"query": {"term": {"url": url}}, "_source": ["text", "owner"]})["hits"]["hits"]
    assert hits and all(h["_source"]["owner"] == f"a-{keys['tag']}" for h in hits)  # kept by the admin
    assert not any("hoax" in h["_source"]["text"] for h in hits)


def test_a_document_that_changes_hands_during_the_ingest_is_not_overwritten(settings, store, embedder,
                                                                            make_alias):
    """The race between the look-up and the write: another writer's documents land just after
    the batch's ``mget``; the conditional writes (create, if_seq_no) refuse to overwrite them."""
    from plugin.index.store import Store
    from plugin.index.templates import IndexSpec, ensure_index
    from plugin.ingest import RawRecord, ingest
    from plugin.owners import Writer

    alias = make_alias()
    ensure_index(store, IndexSpec(alias=alias, model=embedder.name, dimension=embedder.dim))
    new, old = _fc("race-new", "False"), _fc("race-old", "False")
    first = ingest([RawRecord(ref="r0", data=old)], store=store, embedder=embedder, index=alias,
                   writer=Writer("b"))
    assert first.indexed == 1

    class Racing(Store):
        def mget(self, index, ids, *, source):
            found = super().mget(index, ids, source=source)
            for doc in (new, old):
                store.put(index, doc["id"], {**doc, "rating": "theirs", "owner": "a"})
            return found

    report = ingest([RawRecord(ref="r1", data=new), RawRecord(ref="r2", data=old)],
                    store=Racing(settings, client=store.client), embedder=embedder, index=alias,
                    writer=Writer("b"))
    assert (report.indexed, report.updated, report.rejected) == (0, 0, 2)
    assert all("written by someone else during this ingest" in r["reason"] for r in report.rejects)
    assert [store.get(alias, d["id"])["rating"] for d in (new, old)] == ["theirs", "theirs"]


@pytest.mark.parametrize("batch_size", [1, 64])
def test_an_id_repeated_in_one_body_is_written_twice(store, embedder, make_alias, batch_size):
    """A repeat of an id whose first copy is still in flight (the next batch's look-up cannot
    see it yet, batch_size 1) or in the same batch is an update, not a refusal or a race."""
    from plugin.index.templates import IndexSpec, ensure_index
    from plugin.ingest import RawRecord, ingest
    from plugin.owners import Writer

    alias = make_alias()
    ensure_index(store, IndexSpec(alias=alias, model=embedder.name, dimension=embedder.dim))
    doc = _fc("twice", "False")
    records = [RawRecord(ref="r1", data=doc), RawRecord(ref="r2", data={**doc, "rating": "True"})]
    report = ingest(records, store=store, embedder=embedder, index=alias, writer=Writer("a"),
                    batch_size=batch_size)
    assert (report.indexed, report.updated, report.rejected) == (1, 1, 0), report.rejects
    assert (store.get(alias, doc["id"])["rating"], store.get(alias, doc["id"])["owner"]) == ("True", "a")


def test_init_adds_the_owner_field_to_an_index_made_before_it(store, embedder, make_alias):
    from plugin.index.bodies import load_template
    from plugin.index.templates import IndexSpec, install_index, template_properties

    alias = make_alias()
    spec = IndexSpec(alias=alias, model=embedder.name, dimension=embedder.dim)
    older = {k: v for k, v in template_properties(spec).items() if k != "owner"}
    analysis = load_template("component/factsieve-factcheck-fields")["template"]["settings"]["analysis"]
    store.create_index(f"{alias}-v1", {"settings": {"index": {"knn": True}, "analysis": analysis},
                                       "mappings": {"dynamic": False, "_meta": spec.meta(),
                                                    "properties": older}})
    store.update_aliases([{"add": {"index": f"{alias}-v1", "alias": alias}}])
    assert "owner" not in store.mapping_properties(alias)
    assert install_index(store, spec) == f"{alias}-v1"
    assert store.mapping_properties(alias)["owner"] == {"type": "keyword"}


def test_a_delete_checks_the_version_whose_owner_it_read(store, make_alias, embedder):
    """``FactCheckIndex.delete`` deletes on the version it checked: a document rewritten in
    between (another owner now) is a 409, and nothing is deleted."""
    from plugin.errors import Conflict
    from plugin.index.templates import IndexSpec, ensure_index
    from plugin.owners import existing

    alias = make_alias()
    ensure_index(store, IndexSpec(alias=alias, model=embedder.name, dimension=embedder.dim))
    doc = _fc("versioned", "False")
    store.put(alias, doc["id"], {**doc, "owner": "a"})
    read = existing(store.mget(alias, [doc["id"]], source=["owner"]))[doc["id"]]
    store.put(alias, doc["id"], {**doc, "owner": "b"})
    with pytest.raises(Conflict, match="changed while it was being deleted"):
        store.delete(alias, doc["id"], if_seq_no=read.seq_no, if_primary_term=read.primary_term)
    assert store.get(alias, doc["id"])["owner"] == "b"
