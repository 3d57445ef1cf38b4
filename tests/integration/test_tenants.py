"""Tenants (issue 11, point 1): keys belong to a tenant and carry a scope; jobs, posts, webhook
subscriptions and delivery logs are the tenant's own; the fact-check corpus is shared."""
import uuid

import pytest

from plugin.service import handlers
from plugin.service.keys import Scope
from plugin.service.webhooks import Event
from tests.integration.conftest import problem_of

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
