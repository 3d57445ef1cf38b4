"""The desk's claims in chromium: the claim queue (the claim spreading most on top), one claim's
page, a post split out with the keyboard, and one decision for the claim that decides its posts.
Makes the docs' screenshot of the claim queue."""
from __future__ import annotations

import uuid

import pytest
import requests

from plugin.service.keys import Scope
from tests.browser.conftest import sign_in, submit
from tests.integration.conftest import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.browser]

RUMOUR = ("BREAKING: 5G masts are spreading the coronavirus!!",
          "RT @newsdesk: BREAKING: 5G masts are spreading the coronavirus!! https://t.co/x1",
          "5G masts are spreading the coronavirus!! 😡")
OTHER = "Did you know honey never goes bad if you keep it sealed?"


def api(served: str, key: str, path: str) -> dict:
    resp = requests.get(f"{served}{path}", headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_the_claim_queue_split_and_one_decision_for_the_claim(context, served, desk_services, screenshots):
    tenant = f"desk-c-{uuid.uuid4().hex[:6]}"
    key = desk_services.keys.create("Dee Desk", Scope.WRITE, tenant)[1]
    other = submit(served, key, OTHER)
    ids = [submit(served, key, text) for text in RUMOUR]
    claims = api(served, key, "/v1/claims?sort=posts")["claims"]
    rumour = claims[0]
    assert rumour["post_count"] == 3, claims

    page = context.new_page()
    sign_in(page, key)
    page.get_by_role("link", name="Claims").click()
    page.wait_for_url("**/desk/claims")
    rows = page.locator("li.claim-row")
    # the claim spreading most comes first
    assert rows.first.get_attribute("data-claim-id") == rumour["id"]
    assert "3 posts" in rows.first.locator(".posts").inner_text()
    assert rows.count() == 2
    screenshots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(screenshots / "desk-claims.png"), full_page=False)

    rows.first.get_by_role("link").click()
    page.wait_for_url(f"**/desk/claims/{rumour['id']}")
    assert page.locator("li.claim-post").count() == 3
    # "not the same claim", from the keyboard: the last post leaves for a claim of its own
    split = page.locator(f"li.claim-post[data-post-id='{ids[2]}'] button.split-button")
    split.focus()
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "of its own" in page.locator("#messages").inner_text()
    assert page.locator("li.claim-post").count() == 2
    detail = api(served, key, f"/v1/claims/{rumour['id']}")
    assert detail["post_count"] == 2 and [e["action"] for e in detail["events"]] == ["split"]
    assert detail["events"][0]["actor"] == "Dee Desk"

    # one decision for the claim: its top candidate, confirmed for every post still in it
    with page.expect_navigation():
        page.locator("form.claim-decide button.confirm").first.click()
    assert "Claim decided" in page.locator("#messages").inner_text()
    assert page.locator("#claim-status").inner_text() == "answered"
    for post_id in ids[:2]:
        item = api(served, key, f"/v1/review/{post_id}")
        assert item["status"] == "confirmed" and item["decisions"][-1]["actor"] == "Dee Desk"
        assert item["decisions"][-1]["origin"] == "desk"
    # the split post and the other claim were left alone
    assert api(served, key, f"/v1/review/{ids[2]}")["status"] == "pending"
    assert api(served, key, f"/v1/review/{other}")["status"] == "pending"
    # an answered claim goes to the end of the priority queue
    page.goto("/desk/claims")
    rows = page.locator("li.claim-row")
    wait_for(lambda: rows.count() == 3, what="the three claims")
    assert rows.last.get_attribute("data-claim-id") == rumour["id"]
    assert "Answered by" in rows.last.locator(".answer").inner_text()
