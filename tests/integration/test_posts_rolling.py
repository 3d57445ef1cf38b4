"""The posts alias rolls over by month and drops old months (``plugin.index.rolling``), over the
real OpenSearch: posts keep joining their claims across the month boundary, an old post matched
again is rewritten where it lives (never twice), a split reaches a post in an older index, and
when the oldest index is deleted the claims keep their counts and lead post. An alias made
before rolling (``<alias>-v1``) rolls without losing its posts."""
from __future__ import annotations

import time
import uuid

import pytest

from plugin.index import rolling
from plugin.service import handlers

pytestmark = pytest.mark.integration

FIVE_G = "BREAKING: 5G masts are spreading the coronavirus!!"
RETWEET = "RT @newsdesk: BREAKING: 5G masts are spreading the coronavirus!! https://t.co/x1"
EDITED = "5G masts are spreading the coronavirus!! 😡"
DAY_MS = 86_400_000


@pytest.fixture
def rolled(api_settings, store, embedder, api_corpus):
    """Services whose posts and claims aliases are this test's own."""
    from plugin.service.services import Services

    tag = uuid.uuid4().hex[:8]
    settings = api_settings.model_copy(update={"posts_index": f"fs-test-roll-{tag}",
                                               "claims_index": f"fs-test-rollc-{tag}"})
    yield Services(settings, store=store, embedder=embedder)
    for alias in (settings.posts_index, settings.claims_index):
        store.delete_index(f"{alias}-v*")
        store.delete_index_template(f"factsieve-{alias}")


def run(services, tenant: str, text: str, post_id: str) -> dict:
    job = {"id": f"job-{uuid.uuid4().hex[:8]}", "tenant": tenant,
           "input": {"post": {"id": post_id, "text": text, "lang": "en", "k": 4}}}
    out = handlers.run_post(services, job, lambda did: None)
    services.store.refresh(services.settings.posts_index)
    services.store.refresh(services.settings.claims_index)
    return out


def copies(services, tenant: str, post_id: str) -> list[str]:
    body = {"size": 10, "_source": False, "query": {"bool": {"filter": [
        {"term": {"tenant": tenant}}, {"term": {"post_id": post_id}}]}}}
    return [h["_index"] for h in services.store.search(services.settings.posts_index, body)["hits"]["hits"]]


def test_posts_roll_over_by_month_and_claims_outlive_deleted_posts(rolled):
    store, alias = rolled.store, rolled.settings.posts_index
    tenant = f"roll-{uuid.uuid4().hex[:6]}"
    first = run(rolled, tenant, FIVE_G, "p1")
    second = run(rolled, tenant, RETWEET, "p2")
    claim = first["claim"]["claim_id"]
    assert second["claim"]["claim_id"] == claim
    assert store.alias_indices(alias) == [f"{alias}-v1-000001"] == [store.write_index(alias)]

    # a pass in the same month changes nothing; in the next month it rolls
    now = int(time.time() * 1000)
    assert rolling.roll(store, alias, now_ms=now, retention_days=365, ism=False)["rolled_to"] is None
    out = rolling.roll(store, alias, now_ms=now + 32 * DAY_MS, retention_days=365, ism=False)
    assert out["rolled_to"] == f"{alias}-v1-000002" == out["write_index"] and out["deleted"] == []
    assert store.alias_indices(alias) == [f"{alias}-v1-000001", f"{alias}-v1-000002"]
    # the new index was made this month: the next pass has nothing to roll
    assert rolling.roll(store, alias, now_ms=now, retention_days=365, ism=False)["rolled_to"] is None

    # a new post joins the claim across the boundary, and lands in the new month's index
    third = run(rolled, tenant, EDITED, "p3")
    assert third["claim"]["claim_id"] == claim
    assert copies(rolled, tenant, "p3") == [f"{alias}-v1-000002"]
    # the first post matched again (a retried job, a re-sent post) stays where it is, once
    again = run(rolled, tenant, FIVE_G, "p1")
    assert again["claim"]["claim_id"] == claim
    assert copies(rolled, tenant, "p1") == [f"{alias}-v1-000001"]
    assert rolled.claims.get(tenant, claim).post_count == 3
    # the desk splits out a post that lives in the older index
    split = rolled.claims.split(tenant, claim, "p2", actor="desk")
    assert split["claim"].post_count == 2 and copies(rolled, tenant, "p2") == [f"{alias}-v1-000001"]
    store.refresh(alias)

    # a year after the first index stopped taking posts it is deleted; the claim keeps its
    # counts and lead, and lists the posts that are left
    before = rolled.claims.get(tenant, claim)
    late = now + 32 * DAY_MS + 366 * DAY_MS
    out = rolling.roll(store, alias, now_ms=late, retention_days=365, ism=False)
    assert out["deleted"] == [f"{alias}-v1-000001"] and out["rolled_to"] == f"{alias}-v1-000003"
    assert store.alias_indices(alias) == [f"{alias}-v1-000002", f"{alias}-v1-000003"]
    after = rolled.claims.get(tenant, claim)
    assert (after.post_count, after.lead, after.langs) == (before.post_count, before.lead, before.langs)
    assert [p["post_id"] for p in rolled.claims.posts(tenant, claim)["posts"]] == ["p3"]
    # and posts keep coming
    assert run(rolled, tenant, RETWEET, "p4")["claim"]["claim_id"] == claim


def test_an_alias_made_before_rolling_rolls_without_losing_its_posts(rolled):
    store, alias = rolled.store, rolled.settings.posts_index
    rolled.posts.ensure()  # install the template, then stand in an old deployment's layout
    store.delete_index(f"{alias}-v*")
    store.create_index(f"{alias}-v1", {"aliases": {alias: {}}})
    tenant = f"roll-{uuid.uuid4().hex[:6]}"
    run(rolled, tenant, FIVE_G, "old")
    assert rolling.ensure_rolling(store, alias, 365)["write_index"] == f"{alias}-v1"
    out = rolling.roll(store, alias, now_ms=int(time.time() * 1000) + 32 * DAY_MS, retention_days=365, ism=False)
    assert out["rolled_to"] == f"{alias}-v1-000002"
    assert store.alias_indices(alias) == [f"{alias}-v1", f"{alias}-v1-000002"]
    assert copies(rolled, tenant, "old") == [f"{alias}-v1"]
    run(rolled, tenant, "Did you know honey never goes bad if you keep it sealed?", "new")
    assert copies(rolled, tenant, "new") == [f"{alias}-v1-000002"]
