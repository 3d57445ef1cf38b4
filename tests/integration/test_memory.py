"""The memory end to end over the real OpenSearch and Redis: posts matched by the post job
(``run_post``) are remembered; the desk's decisions on them (``ReviewDesk.decide``) change how
their re-posts are matched, for that tenant only, through the post job and ``POST /v1/match``."""
from __future__ import annotations

import uuid

import pytest

from plugin.models import CONFIRMED_BY_DESK
from plugin.search.request import MatchRequest
from plugin.service.matching import Occasion, match_post
from plugin.service import handlers

pytestmark = pytest.mark.integration

FIVE_G = "BREAKING: 5G masts are spreading the coronavirus!!"
RETWEET = "RT @newsdesk: BREAKING: 5G masts are spreading the coronavirus!! https://t.co/x1"
EDITED = "5G masts are spreading the coronavirus!! 😡"


@pytest.fixture
def post(api_services, api_corpus):
    """Run the post job for ``(tenant, text, k)``; the post's id and its match result."""
    def run(tenant: str, text: str, k: int = 4) -> tuple[str, dict]:
        body = {"id": f"mem-{uuid.uuid4().hex[:10]}", "text": text, "lang": "en", "k": k}
        job = {"id": f"job-{uuid.uuid4().hex[:8]}", "tenant": tenant, "input": {"post": body}}
        out = handlers.run_post(api_services, job, lambda did: None)
        return body["id"], out["match"]

    return run


def settle(api_services) -> None:
    """What the job and the desk wrote, searchable (the indexes refresh every second anyway)."""
    for alias in (api_services.settings.posts_index, api_services.settings.decisions_index):
        api_services.store.refresh(alias)


def decide(api_services, tenant: str, **decision) -> dict:
    (recorded,) = api_services.review.decide(tenant, "ana", [decision])
    settle(api_services)
    return recorded.to_dict()


def ids(result: dict) -> list[str]:
    return [m["id"] for m in result["matches"]]


def test_rejected_pairs_stay_away_and_confirmed_ones_come_first_for_that_tenant_only(
        api_services, post, app):
    from plugin.service.keys import Scope

    a, b = f"mem-a-{uuid.uuid4().hex[:6]}", f"mem-b-{uuid.uuid4().hex[:6]}"
    first, r0 = post(a, FIVE_G)
    assert len(r0["matches"]) == 4, r0
    top, wrong, right = ids(r0)[:3]
    decide(api_services, a, post_id=first, action="reject", factcheck_id=wrong)

    # a re-post: the rejected pair is not suggested again
    second, r1 = post(a, RETWEET)
    assert wrong not in ids(r1) and ids(r1)[:2] == [top, right]
    assert all("reason" not in m for m in r1["matches"])
    confirm = decide(api_services, a, post_id=second, action="confirm", factcheck_id=right)

    # a later near-duplicate: the confirmed pair first, marked, the rejected one still away
    third, r2 = post(a, EDITED)
    assert ids(r2)[0] == right and wrong not in ids(r2)
    best = r2["matches"][0]
    assert best["reason"] == CONFIRMED_BY_DESK and best["rank"] == 1
    assert best["memory"]["post_id"] == second and best["memory"]["decision_id"] == confirm["id"]
    assert best["memory"]["similarity"] >= api_services.settings.memory_min_similarity
    assert best["confidence"] >= 0.95
    item = api_services.review.item(a, third)  # the desk shows what memory gave
    assert item.candidates[0].factcheck_id == right

    # the same through POST /v1/match with the tenant's key
    _, key = api_services.keys.create("reader", Scope.READ, a)
    resp = app.test_client().post("/v1/match", json={"text": EDITED, "k": 4},
                                  headers={"Authorization": f"Bearer {key}"})
    assert resp.status_code == 200, resp.data
    assert resp.get_json()["matches"][0]["reason"] == CONFIRMED_BY_DESK

    # another tenant's re-post: exactly what the match path gives a post job of a tenant with no
    # history (reranked, as post jobs are), nothing remembered
    plain = match_post(api_services.matching, MatchRequest(text=EDITED, lang="en", k=4), b,
                       occasion=Occasion.JOB).to_dict()
    _, rb = post(b, EDITED)
    assert ids(rb) == ids(plain) and wrong in ids(rb)
    assert all("reason" not in m and "memory" not in m for m in rb["matches"])

    # undone: the confirm no longer counts; the reject still does
    decide(api_services, a, post_id=second, action="undo")
    _, r3 = post(a, EDITED)
    assert all("reason" not in m for m in r3["matches"]) and wrong not in ids(r3)


def test_a_manual_match_is_put_in_for_a_re_post_and_none_drops_all_shown(api_services, post):
    tenant = f"mem-c-{uuid.uuid4().hex[:6]}"
    first, r0 = post(tenant, FIVE_G, k=2)
    assert "api-7" not in ids(r0)
    decide(api_services, tenant, post_id=first, action="manual", factcheck_id="api-7")
    _, r1 = post(tenant, RETWEET, k=2)
    assert ids(r1)[0] == "api-7" and len(r1["matches"]) == 2
    assert r1["matches"][0]["claim"] == "Lightning never strikes the same place twice."

    other = f"mem-d-{uuid.uuid4().hex[:6]}"
    first, r0 = post(other, FIVE_G, k=3)
    decide(api_services, other, post_id=first, action="none")
    _, r1 = post(other, EDITED, k=3)
    assert not set(ids(r0)) & set(ids(r1))
