"""Claims end to end over the real OpenSearch: posts matched by the post job (``run_post``) join
claims; re-posts and rewordings join one claim, other claims stay apart, another tenant never
shares one; the API lists and shows them; a job retried after the post was written but before its
claim was counted leaves the post in exactly one claim, counted once."""
from __future__ import annotations

import uuid

import pytest

from plugin.service import handlers
from plugin.service.keys import Scope

pytestmark = pytest.mark.integration

FIVE_G = "BREAKING: 5G masts are spreading the coronavirus!!"
RETWEET = "RT @newsdesk: BREAKING: 5G masts are spreading the coronavirus!! https://t.co/x1"
EDITED = "5G masts are spreading the coronavirus!! 😡"
HONEY = "Did you know honey never goes bad if you keep it sealed?"


@pytest.fixture
def post(api_services, api_corpus):
    """Run the post job for ``(tenant, text)``; the job's output."""
    def run(tenant: str, text: str, post_id: str | None = None, lang: str = "en") -> dict:
        body = {"id": post_id or f"cl-{uuid.uuid4().hex[:10]}", "text": text, "lang": lang, "k": 4}
        job = {"id": f"job-{uuid.uuid4().hex[:8]}", "tenant": tenant, "input": {"post": body}}
        out = handlers.run_post(api_services, job, lambda did: None)
        api_services.store.refresh(api_services.settings.posts_index)
        api_services.store.refresh(api_services.settings.claims_index)
        return out

    return run


def reader(api_services, app, tenant: str):
    _, key = api_services.keys.create("claims-reader", Scope.READ, tenant)
    client = app.test_client()
    return lambda url: client.get(url, headers={"Authorization": f"Bearer {key}"})


def test_reposts_join_one_claim_and_other_claims_stay_apart(api_services, post, app):
    tenant, other = f"cl-a-{uuid.uuid4().hex[:6]}", f"cl-b-{uuid.uuid4().hex[:6]}"
    first = post(tenant, FIVE_G)
    second = post(tenant, RETWEET)
    third = post(tenant, EDITED)
    honey = post(tenant, HONEY)
    claim = first["claim"]["claim_id"]
    assert first["claim"]["via"] is None  # the first post starts its claim
    assert second["claim"]["claim_id"] == claim and third["claim"]["claim_id"] == claim
    assert second["claim"]["signals"], second["claim"]
    assert honey["claim"]["claim_id"] != claim
    # another tenant's same post starts that tenant's own claim
    theirs = post(other, FIVE_G)
    assert theirs["claim"]["claim_id"] != claim

    get = reader(api_services, app, tenant)
    listed = get("/v1/claims?sort=posts")
    assert listed.status_code == 200, listed.data
    body = listed.get_json()
    assert body["total"] == 2 and body["claims"][0]["id"] == claim
    top = body["claims"][0]
    assert top["post_count"] == 3 and top["langs"] == {"en": 3}
    assert top["lead"]["post_id"] in {first["post_id"], second["post_id"], third["post_id"]}
    assert top["fact_check"]["id"] == "api-2"
    assert sum(d["posts"] for d in top["sparkline"]) == 3
    assert get("/v1/claims?min_posts=2").get_json()["total"] == 1
    assert get("/v1/claims?lang=es").get_json()["total"] == 0

    page = get("/v1/claims?sort=posts&limit=1").get_json()
    assert len(page["claims"]) == 1 and page["next"]
    rest = get(f"/v1/claims?sort=posts&limit=1&cursor={page['next']}").get_json()
    assert rest["claims"][0]["id"] == honey["claim"]["claim_id"]

    shown = get(f"/v1/claims/{claim}?posts_limit=2")
    assert shown.status_code == 200, shown.data
    detail = shown.get_json()
    assert detail["posts_total"] == 3 and len(detail["posts"]) == 2 and detail["posts_next"]
    assert detail["posts"][0]["post_id"] == first["post_id"]
    more = get(f"/v1/claims/{claim}?posts_limit=2&posts_cursor={detail['posts_next']}").get_json()
    assert [p["post_id"] for p in more["posts"]] == [third["post_id"]]

    # the post's job answer names its claim, as GET /v1/posts/<id> shows the job's result
    assert first["claim"]["claim_id"] == claim


def test_bad_claim_requests(api_services, post, app):
    tenant, other = f"cl-c-{uuid.uuid4().hex[:6]}", f"cl-d-{uuid.uuid4().hex[:6]}"
    mine = post(tenant, HONEY)["claim"]["claim_id"]
    get = reader(api_services, app, other)
    for url in (f"/v1/claims/{mine}", "/v1/claims/nope"):
        resp = get(url)
        assert resp.status_code == 404 and resp.content_type == "application/problem+json", url
    for url in ("/v1/claims?sort=sideways", "/v1/claims?status=maybe", "/v1/claims?cursor=xyz",
                "/v1/claims?limit=0", "/v1/claims?min_posts=-1", "/v1/claims?colour=red"):
        resp = get(url)
        assert resp.status_code in (400, 422) and resp.content_type == "application/problem+json", url


class Crash(Exception):
    pass


def test_a_job_retried_between_the_posts_write_and_the_claims_update_counts_the_post_once(
        api_services, post, monkeypatch):
    tenant = f"cl-e-{uuid.uuid4().hex[:6]}"
    first = post(tenant, FIVE_G)
    claims = api_services.claims
    real = type(claims).add_post

    def dies(self, *a, **k):
        raise Crash("the worker died here")

    monkeypatch.setattr(type(claims), "add_post", dies)
    with pytest.raises(Crash):
        post(tenant, RETWEET, post_id="cl-retried")
    monkeypatch.setattr(type(claims), "add_post", real)
    # the post was written with its claim; the claim did not count it yet
    assert claims.get(tenant, first["claim"]["claim_id"]).post_count == 1
    again = post(tenant, RETWEET, post_id="cl-retried")
    again2 = post(tenant, RETWEET, post_id="cl-retried")  # and a second delivery of the same job
    assert again["claim"]["claim_id"] == again2["claim"]["claim_id"] == first["claim"]["claim_id"]
    assert claims.get(tenant, first["claim"]["claim_id"]).post_count == 2
    posts = claims.posts(tenant, first["claim"]["claim_id"])
    assert sorted(p["post_id"] for p in posts["posts"]) == sorted([first["post_id"], "cl-retried"])


def writer(api_services, app, tenant: str):
    _, key = api_services.keys.create("claims-desk", Scope.WRITE, tenant)
    client = app.test_client()
    headers = {"Authorization": f"Bearer {key}"}
    return (lambda url, body: client.post(url, json=body, headers=headers)), (lambda url: client.get(url, headers=headers))


def test_split_is_a_cannot_link_and_merge_a_must_link_both_logged(api_services, post, app):
    tenant, other = f"cl-f-{uuid.uuid4().hex[:6]}", f"cl-g-{uuid.uuid4().hex[:6]}"
    first = post(tenant, FIVE_G)
    second = post(tenant, RETWEET)
    claim = first["claim"]["claim_id"]
    assert second["claim"]["claim_id"] == claim
    send, get = writer(api_services, app, tenant)

    # "not the same claim": the re-post leaves, with a claim of its own
    resp = send(f"/v1/claims/{claim}/split", {"post_id": second["post_id"], "note": "a different rumour"})
    assert resp.status_code == 200, resp.data
    split = resp.get_json()
    assert split["claim"]["post_count"] == 1 and split["new_claim"]["post_count"] == 1
    new = split["new_claim"]["id"]
    assert split["event"]["action"] == "split" and split["event"]["actor"] == "claims-desk"
    assert split["event"]["posts"] == [second["post_id"]] and split["event"]["claims"] == [new]
    # a later re-post linked to the split post keeps out of the claim it was split from
    third = post(tenant, RETWEET)
    assert third["claim"]["claim_id"] == new, third["claim"]
    # the split shows in the claim's history, and no review export sees it
    shown = get(f"/v1/claims/{claim}").get_json()
    assert [e["action"] for e in shown["events"]] == ["split"]
    assert list(api_services.review.export(tenant)) == []  # no review decision yet, and no claim event

    # the same split again: the post is no longer in the claim
    again = send(f"/v1/claims/{claim}/split", {"post_id": second["post_id"]})
    assert again.status_code == 409 and again.content_type == "application/problem+json"
    # a claim's only post cannot be split out
    assert send(f"/v1/claims/{claim}/split", {"post_id": first["post_id"]}).status_code == 409

    # merge by hand: the two claims are one after all
    honey = post(tenant, HONEY)["claim"]["claim_id"]
    resp = send("/v1/claims/merge", {"claims": [claim, new], "into": claim})
    assert resp.status_code == 200, resp.data
    merged = resp.get_json()
    assert merged["claim"]["id"] == claim and merged["merged"] == [new]
    assert merged["claim"]["post_count"] == 3 and merged["event"]["action"] == "merge"
    gone = get(f"/v1/claims/{new}").get_json()
    assert gone["status"] == "merged" and gone["merged_into"] == claim
    detail = get(f"/v1/claims/{claim}").get_json()
    assert detail["posts_total"] == 3 and detail["merged"] == [new]
    # a later post linked to a post of the merged claim joins the claim it went into
    fourth = post(tenant, RETWEET)
    assert fourth["claim"]["claim_id"] == claim
    assert get(f"/v1/claims/{claim}").get_json()["post_count"] == 4
    # merging again a merged claim, an unknown or another tenant's claim
    assert send("/v1/claims/merge", {"claims": [new, honey]}).status_code == 409
    theirs = post(other, HONEY)["claim"]["claim_id"]
    for claims in ([honey, theirs], [honey, "nope"]):
        resp = send("/v1/claims/merge", {"claims": claims})
        assert resp.status_code == 404, claims
    assert get(f"/v1/claims/{honey}").get_json()["status"] == "open"  # nothing merged
    for bad in ({"claims": [honey]}, {"claims": "x"}, {"claims": [honey, honey]}, {}):
        resp = send("/v1/claims/merge", bad)
        assert resp.status_code in (400, 422) and resp.content_type == "application/problem+json", bad


def test_one_decision_on_a_claim_decides_its_posts_and_later_posts_inherit_it(api_services, post, app):
    tenant = f"cl-h-{uuid.uuid4().hex[:6]}"
    first = post(tenant, FIVE_G)
    second = post(tenant, RETWEET)
    third = post(tenant, EDITED)
    claim = first["claim"]["claim_id"]
    assert {second["claim"]["claim_id"], third["claim"]["claim_id"]} == {claim}
    # one post was decided on its own first: it keeps that decision
    api_services.review.decide(tenant, "ana", [{"post_id": third["post_id"], "action": "none"}])
    send, get = writer(api_services, app, tenant)

    resp = send(f"/v1/claims/{claim}/decision", {"action": "confirm", "factcheck_id": "api-2"})
    assert resp.status_code == 200, resp.data
    done = resp.get_json()
    assert done["claim"]["status"] == "answered" and done["claim"]["fact_check"]["id"] == "api-2"
    assert done["claim"]["fact_check"]["confirmed"] is True
    assert sorted(d["post_id"] for d in done["decisions"]) == sorted([first["post_id"], second["post_id"]])
    assert all(d["action"] in ("confirm", "manual") and d["actor"] == "claims-desk" for d in done["decisions"])
    assert done["skipped"] == [{"post_id": third["post_id"], "reason": "already no_match"}]
    assert api_services.review.item(tenant, first["post_id"]).status.value == "confirmed"

    # a later post of the claim: the claim's fact-check first (memory may have said so first)
    later = post(tenant, "RT @x: 5G masts are spreading the coronavirus!! please share")
    assert later["claim"]["claim_id"] == claim
    best = later["match"]["matches"][0]
    assert best["id"] == "api-2" and best["reason"] in ("confirmed-for-claim", "confirmed-by-desk")

    # bad claim decisions
    assert send(f"/v1/claims/{claim}/decision", {"action": "undo"}).status_code == 422
    assert send(f"/v1/claims/{claim}/decision", {"action": "manual", "factcheck_id": "nope"}).status_code == 404
    assert send("/v1/claims/nope/decision", {"action": "none"}).status_code == 404


def test_a_claim_gaining_posts_fast_sends_one_trending_alert_per_window(api_services, api_corpus, receiver, tmp_path):
    import json

    from plugin.events import Event
    from plugin.service.services import Services

    tenant, quiet, burst = (f"cl-{k}-{uuid.uuid4().hex[:6]}" for k in "tqb")
    path = tmp_path / "rules.json"
    path.write_text(json.dumps({"tenants": {t: {"trending_posts": 3, "trending_window_hours": 1} for t in (tenant, burst)}}))
    svc = Services(api_services.settings.model_copy(update={"review_rules_path": str(path)}),
                   store=api_services.store, embedder=api_services.embedder)
    subs = {t: svc.webhooks.create(receiver.url(f"/trend-{t}"), [Event.CLAIM_TRENDING], owner=t)
            for t in (tenant, quiet, burst)}

    def run(t: str, text: str, post_id: str | None = None, refresh: bool = True) -> dict:
        body = {"id": post_id or f"tr-{uuid.uuid4().hex[:10]}", "text": text, "lang": "en"}
        out = handlers.run_post(svc, {"id": f"job-{uuid.uuid4().hex[:8]}", "tenant": t, "input": {"post": body}},
                                lambda did: None)
        if refresh:
            svc.store.refresh(svc.settings.posts_index)
        return out

    texts = (FIVE_G, RETWEET, EDITED, "RT @y: " + FIVE_G, HONEY)
    outs = [run(tenant, t) for t in texts]
    sent = [d for o in outs for d in o["deliveries"]]
    # the third post of the claim makes it trend; the fourth, in the same window, sends nothing
    assert [len(o["deliveries"]) for o in outs] == [0, 0, 1, 0, 0], outs
    (alert,) = sent
    assert alert["subscription_id"] == subs[tenant]["id"]
    body = json.loads(svc.webhooks.delivery(alert["delivery_id"])["body"])
    assert body["event"] == "claim.trending"
    data = body["data"]
    assert data["claim"]["id"] == outs[0]["claim"]["claim_id"] and data["claim"]["post_count"] == 3
    assert data["posts_in_window"] == 3 and data["window_hours"] == 1.0
    assert data["best_match"]["id"] == "api-2"
    assert svc.claims.get(tenant, data["claim"]["id"]).trending_at is not None
    # the third post's job run again (a worker died after marking the claim, before planning the
    # alert): the same alert is planned again, under the same delivery id; another post's is not
    again = run(tenant, EDITED, outs[2]["post_id"])
    assert [d["delivery_id"] for d in again["deliveries"]] == [alert["delivery_id"]]
    assert run(tenant, "5G masts are spreading the coronavirus, share!!")["deliveries"] == []
    # a tenant without the rule gets no alert, whatever the spread
    assert all(not o["deliveries"] for o in (run(quiet, t) for t in texts[:4]))
    # a burst: three re-posts before the index shows any of them trend on the third
    svc.store.put_index_settings(svc.settings.posts_index, {"refresh_interval": "-1"})
    try:
        outs = [run(burst, t, refresh=False) for t in texts[:3]]
    finally:
        svc.store.put_index_settings(svc.settings.posts_index, {"refresh_interval": None})
    assert len({o["claim"]["claim_id"] for o in outs}) == 1, outs
    assert [len(o["deliveries"]) for o in outs] == [0, 0, 1], outs


def test_a_repost_a_moment_later_joins_the_claim_before_the_index_shows_the_first(api_services, api_corpus):
    """The posts index shows a post to kNN only after its refresh; the last seconds' posts are
    read from Redis beside it (``plugin.claims.recent``), so a burst of re-posts makes one claim;
    and a decision on the claim a moment later decides every post of it, shown or not yet."""
    from plugin.service.claiming import decide_claim

    tenant = f"cl-burst-{uuid.uuid4().hex[:6]}"
    api_services.posts.ensure()
    api_services.store.put_index_settings(api_services.settings.posts_index, {"refresh_interval": "-1"})
    try:
        outs = []
        for text in (FIVE_G, RETWEET, EDITED):
            body = {"id": f"burst-{uuid.uuid4().hex[:10]}", "text": text, "lang": "en", "k": 4}
            outs.append(handlers.run_post(api_services, {"id": f"job-{uuid.uuid4().hex[:8]}", "tenant": tenant,
                                                         "input": {"post": body}}, lambda did: None))
        claims = {o["claim"]["claim_id"] for o in outs}
        assert len(claims) == 1, outs
        assert outs[1]["claim"]["via"] == outs[0]["post_id"] and "embedding" in outs[1]["claim"]["signals"]
        done = decide_claim(api_services.claims, api_services.review, api_services.posts, tenant, "ana",
                            outs[0]["claim"]["claim_id"], "confirm", "api-2")
        one_more = {"id": f"burst-{uuid.uuid4().hex[:10]}", "text": "RT @y: " + FIVE_G, "lang": "en", "k": 4}
        handlers.run_post(api_services, {"id": f"job-{uuid.uuid4().hex[:8]}", "tenant": tenant,
                                         "input": {"post": one_more}}, lambda did: None)
        page = api_services.claims.posts(tenant, outs[0]["claim"]["claim_id"])  # the claim's page lists them all
        assert page["total"] == 4 and len(page["posts"]) == 4
    finally:
        api_services.store.put_index_settings(api_services.settings.posts_index, {"refresh_interval": None})
    assert sorted(d["post_id"] for d in done["decisions"]) == sorted(o["post_id"] for o in outs), done
    assert done["claim"]["post_count"] == 3 and done["skipped"] == []


def test_a_claim_page_shows_a_post_that_joined_before_the_claims_index_refreshed(api_services, post):
    """A post job counts its post in the claim and answers at once; the claims list is a search,
    which shows the claim as of the index's last refresh: each page's claims are read again by id,
    so the desk's list counts the post the asker was just told about (both sorts)."""
    tenant = f"cl-now-{uuid.uuid4().hex[:6]}"
    first = post(tenant, FIVE_G)
    claim = first["claim"]["claim_id"]
    api_services.store.put_index_settings(api_services.settings.claims_index, {"refresh_interval": "-1"})
    try:
        body = {"id": f"now-{uuid.uuid4().hex[:10]}", "text": RETWEET, "lang": "en", "k": 4}
        out = handlers.run_post(api_services, {"id": f"job-{uuid.uuid4().hex[:8]}", "tenant": tenant,
                                               "input": {"post": body}}, lambda did: None)
        assert out["claim"]["claim_id"] == claim
        for sort in ("newest", "priority"):
            page = api_services.claims.page(tenant, sort=sort)
            assert [(c["id"], c["post_count"]) for c in page["claims"]] == [(claim, 2)], (sort, page)
    finally:
        api_services.store.put_index_settings(api_services.settings.claims_index, {"refresh_interval": None})
