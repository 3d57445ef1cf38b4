"""The desk end to end in chromium: sign-in, the queue, keyboard decisions, bulk, undo, the
409 of a second reviewer, tenants, CSRF, expiry, escaping. Makes the docs' screenshot."""
from __future__ import annotations

import json
import time

import pytest
import requests

from api.desk.present import dom_id
from tests.browser.conftest import sign_in, submit
from tests.integration.conftest import wait_for
from tests.integration.test_workers import expected_signature

pytestmark = [pytest.mark.integration, pytest.mark.browser]

FIVE_G = "BREAKING: 5G masts are spreading the coronavirus!!"
CARROTS = "Eating carrots gives you night vision, my grandmother says"
XSS = 'Lemon in hot water cures covid <script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'


def item(page, post_id: str):
    return page.locator(f"#{dom_id(post_id)}")


def review(base: str, key: str, post_id: str) -> dict:
    resp = requests.get(f"{base}/v1/review/{post_id}", headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_sign_in_and_a_submitted_post_shows_with_its_candidates(context, served, keys, screenshots):
    xss_id = submit(served, keys["ana"], XSS)
    post_id = submit(served, keys["ana"], FIVE_G)  # the newest: on top of the screenshot
    page = context.new_page()
    sign_in(page, keys["ana"])
    assert page.get_by_text("Signed in as").is_visible()
    it = item(page, post_id)
    assert FIVE_G in it.locator(".post-text").inner_text()
    cands = it.locator("li.candidate")
    assert cands.count() >= 1
    first = cands.first
    assert first.locator(".claim").inner_text()
    assert "BM25" in first.locator(".why").inner_text() and "kNN" in first.locator(".why").inner_text()
    assert first.locator(".bar").count() == 1 and "Confidence" in first.locator(".confidence").inner_text()
    assert first.get_by_role("link", name="Read the fact-check").count() == 1
    # a <script> post is text: shown, never run
    x = item(page, xss_id)
    assert "<script>window.__xss = 1</script>" in x.locator(".post-text").inner_text()
    assert page.evaluate("window.__xss") is None
    screenshots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(screenshots / "desk-queue.png"), full_page=False)


#: the queue's freshness poll, now (as its timer would fire it)
POLL_NOW = """() => { const f = document.getElementById("fresh");
    htmx.ajax("GET", f.getAttribute("hx-get"), {source: f, target: f, swap: "outerHTML"}); }"""


def test_keyboard_confirm_records_actor_versions_signals_then_undo(context, served, keys, receiver):
    headers = {"Authorization": f"Bearer {keys['ana']}"}
    path = f"/confirmed-{time.time_ns()}"
    sub = requests.post(f"{served}/v1/webhooks", json={"url": receiver.url(path), "events": ["match.confirmed"]},
                        headers=headers, timeout=30).json()
    post_id = submit(served, keys["ana"], CARROTS)
    page = context.new_page()
    sign_in(page, keys["ana"])
    it = item(page, post_id)
    it.focus()
    page.keyboard.press("1")
    wait_for(lambda: item(page, post_id).get_attribute("data-status") == "confirmed", what="the confirm")
    got = review(served, keys["ana"], post_id)
    assert got["status"] == "confirmed" and got["decided_by"] == "Ana Reviewer"
    decision = got["decisions"][-1]
    assert decision["action"] == "confirm" and decision["actor"] == "Ana Reviewer" and decision["origin"] == "desk"
    assert decision["versions"] and decision["signals"] and decision["rank"] == 1
    assert decision["factcheck_id"] == got["candidates"][0]["factcheck_id"]
    delivered = wait_for(lambda: [r for r in receiver.received(path)
                                  if json.loads(r["body"])["data"]["decision"]["post_id"] == post_id],
                         what="the match.confirmed webhook")
    got_headers, body = delivered[0]["headers"], delivered[0]["body"]
    assert got_headers["X-FactSieve-Event"] == "match.confirmed"
    assert got_headers["X-FactSieve-Signature"] == expected_signature(sub["secret"], got_headers["X-FactSieve-Timestamp"],
                                                                      body)
    assert json.loads(body)["data"]["decision"]["actor"] == "Ana Reviewer"
    # u takes the last decision back; the queue's freshness poll runs meanwhile (it took the
    # undo's message away once: another request must not clear the decision's in-flight item)
    page.keyboard.press("u")
    page.evaluate(POLL_NOW)
    wait_for(lambda: item(page, post_id).get_attribute("data-status") == "pending", what="the undo")
    got = review(served, keys["ana"], post_id)
    assert got["status"] == "pending" and [d["action"] for d in got["decisions"]] == ["confirm", "undo"]
    wait_for(lambda: "pending again" in page.locator("#messages").inner_text() or None, what="the undo's message")
    requests.delete(f"{served}/v1/webhooks/{sub['id']}", headers=headers, timeout=30)


def test_bulk_reject(context, served, keys):
    ids = [submit(served, keys["ana"], f"{FIVE_G} ({n})") for n in range(2)]
    page = context.new_page()
    sign_in(page, keys["ana"])
    for post_id in ids:
        item(page, post_id).locator("input.select").check()
    page.get_by_role("button", name="Reject selected").click()
    page.wait_for_load_state()
    assert "rejected" in page.locator("#messages").inner_text()
    for post_id in ids:
        assert item(page, post_id).count() == 0  # gone from the pending queue
        got = review(served, keys["ana"], post_id)
        assert got["status"] == "rejected" and got["decisions"][-1]["actor"] == "Ana Reviewer"
    page.goto("/desk/history?status=rejected")
    assert item(page, ids[0]).locator(".decided").inner_text().startswith("Decided by Ana Reviewer")


def test_a_second_reviewers_conflicting_decision_gets_the_409_message(context, served, keys):
    post_id = submit(served, keys["ana"], "Drinking bleach protects you from the virus")
    page = context.new_page()
    sign_in(page, keys["ana"])
    assert item(page, post_id).count() == 1
    # Bo decides first, through the API, while Ana's page still shows the item pending
    resp = requests.post(f"{served}/v1/review/decisions", json={"post_id": post_id, "action": "none"},
                         headers={"Authorization": f"Bearer {keys['bo']}"}, timeout=30)
    assert resp.status_code in (200, 201), resp.text
    item(page, post_id).get_by_role("button", name="Not a claim").click()
    alert = item(page, post_id).locator(".conflict")
    alert.wait_for()
    assert "Bo Reviewer already decided this item" in alert.inner_text()
    assert alert.get_attribute("role") == "alert"
    got = review(served, keys["ana"], post_id)
    assert got["status"] == "no_match" and [d["actor"] for d in got["decisions"]] == ["Bo Reviewer"]


def test_another_tenants_reviewer_sees_none_of_it(context, served, keys):
    post_id = submit(served, keys["ana"], "5G towers cause covid symptoms")
    page = context.new_page()
    sign_in(page, keys["cy"])
    assert "desk-b" in page.locator(".who").inner_text()
    assert item(page, post_id).count() == 0
    assert page.locator("article.item").count() == 0
    resp = page.goto(f"/desk/items/{post_id}")
    assert resp.status == 404
    page.goto("/desk/history?status=rejected")
    assert page.locator("article.item").count() == 0


def test_read_key_sees_but_cannot_decide(context, served, keys):
    post_id = submit(served, keys["ana"], "Garlic cures the coronavirus")
    page = context.new_page()
    sign_in(page, keys["reader"])
    assert item(page, post_id).count() == 1
    assert item(page, post_id).locator("button[name=choice]").count() == 0


def test_a_post_without_the_csrf_token_is_refused(context, served, keys):
    post_id = submit(served, keys["ana"], "Vitamin C megadoses cure covid")
    page = context.new_page()
    sign_in(page, keys["ana"])
    version = item(page, post_id).get_attribute("data-version")
    for form in ({"post_id": post_id, "choice": "none", "version": version},
                 {"post_id": post_id, "choice": "none", "version": version, "csrf_token": "forged"}):
        resp = page.request.post("/desk/decide", form=form)
        assert resp.status == 403 and "CSRF" in resp.text()
    assert review(served, keys["ana"], post_id)["status"] == "pending"


def test_an_expired_session_returns_to_sign_in(context, served, keys, desk_services):
    page = context.new_page()
    sign_in(page, keys["ana"])
    import hashlib

    kv = desk_services.kv
    token = next(c["value"] for c in context.cookies() if c["name"] == "fs_desk")
    assert kv.client.pexpire(kv.key("desk-session", hashlib.sha256(token.encode()).hexdigest()), 1)
    time.sleep(0.05)  # what desk_session_ttl_s of idleness does
    page.goto("/desk/")
    assert "/desk/signin" in page.url
    assert "session ended" in page.get_by_role("alert").inner_text()
    sign_in(page, keys["ana"])  # and back in


def test_manual_match_through_the_search_panel(context, served, keys):
    post_id = submit(served, keys["ana"], "Holding your breath for ten seconds is a test for the coronavirus")
    page = context.new_page()
    sign_in(page, keys["ana"])
    item(page, post_id).focus()
    page.keyboard.press("/")
    panel = page.locator("#manual")
    assert panel.is_visible()
    # one panel, opened under the item it is for
    assert page.evaluate(f"document.getElementById('manual').previousElementSibling.id") == dom_id(post_id)
    page.get_by_label("Find a fact-check for a manual match").fill("coronavirus")
    page.keyboard.press("Enter")
    found = panel.locator(".search-results li")
    found.first.wait_for()
    claim = found.first.locator(".claim").inner_text()
    found.first.get_by_role("button", name="Match this fact-check").click()
    wait_for(lambda: item(page, post_id).get_attribute("data-status") == "confirmed", what="the manual match")
    assert not panel.is_visible()
    got = review(served, keys["ana"], post_id)
    decision = got["decisions"][-1]
    assert decision["action"] == "manual" and decision["actor"] == "Ana Reviewer" and decision["factcheck_id"]
    assert claim  # the reviewer saw what they chose


def test_a_note_goes_with_the_decision_and_is_shown_as_text(context, served, keys):
    post_id = submit(served, keys["ana"], "Sunlight kills the virus in seconds, says a viral video")
    page = context.new_page()
    sign_in(page, keys["ana"])
    it = item(page, post_id)
    it.get_by_role("link", name="Add a note").click()
    note = '<b>seen</b> on Telegram too <script>window.__xss = 3</script>'
    it.get_by_label("Note (kept with your decision)").fill(note)
    it.get_by_role("button", name="None of these").click()
    wait_for(lambda: item(page, post_id).get_attribute("data-status") == "no_match", what="the decision")
    got = review(served, keys["ana"], post_id)
    assert got["decisions"][-1]["note"] == note
    assert note in item(page, post_id).locator(".note-text").inner_text()
    assert page.evaluate("window.__xss") is None
    # the item's own page always has the note field (the way in without scripts)
    page.goto(f"/desk/items/{post_id}")
    assert "Telegram" in page.locator("table").inner_text()


def test_the_queue_says_when_new_posts_arrive(context, served, keys):
    submit(served, keys["ana"], "Masks cause oxygen deficiency in children")
    page = context.new_page()
    sign_in(page, keys["ana"])
    poll = page.locator("#fresh").get_attribute("hx-get")
    assert page.request.get(poll).text().count("new post") == 0
    submit(served, keys["ana"], "Masks cause carbon dioxide poisoning, doctors warn")
    answer = page.request.get(poll).text()
    assert "1 new post since this page was drawn" in answer and "Show them" in answer


def test_an_image_post_shows_its_image_from_the_desk_beside_the_text_read(context, served, keys, screenshots):
    import base64

    from tests.image_drawing import card, encode

    words = "5G MASTS SPREAD COVID"
    data = encode(card(words, size=(900, 500), pt=56))
    post_id = submit(served, keys["ana"], "", image=base64.b64encode(data).decode())
    page = context.new_page()
    seen_urls: list[str] = []
    page.on("request", lambda r: seen_urls.append(r.url))
    sign_in(page, keys["ana"])
    it = item(page, post_id)
    img = it.locator("figure.post-image img")
    img.wait_for()
    img.scroll_into_view_if_needed()
    page.wait_for_function("(el) => el.complete && el.naturalWidth > 0", arg=img.element_handle())
    src = img.get_attribute("src")
    assert src.startswith("/desk/images/")
    width, height = page.evaluate("(el) => [el.naturalWidth, el.naturalHeight]", img.element_handle())
    assert width == 320 and 0 < height < 320  # the thumbnail, not the 900 × 500 original
    assert "5G MASTS" in it.locator(".ocr-text").inner_text().upper()
    assert "no text of its own" in it.locator(".post-text").inner_text()
    # the browser loaded nothing from anywhere but the desk's origin
    assert all(u.startswith(served) for u in seen_urls), seen_urls
    # the thumbnail is the tenant's: another tenant's session gets a 404, no session the sign-in
    other = context.browser.new_context(base_url=served)
    try:
        p2 = other.new_page()
        sign_in(p2, keys["cy"])
        assert p2.request.get(src).status == 404
    finally:
        other.close()
    got = requests.get(f"{served}{src}", allow_redirects=False, timeout=30)
    assert got.status_code == 303 and "/desk/signin" in got.headers["Location"]
    resp = page.request.get(src)
    assert resp.headers["content-type"] == "image/jpeg" and resp.headers["x-content-type-options"] == "nosniff"
    assert "img-src 'self'" in resp.headers["content-security-policy"]
    it.screenshot(path=str(screenshots / "desk-image-post.png"))


def test_unlikely_candidates_are_folded_and_m_unfolds_them(context, served, keys):
    post_id = submit(served, keys["ana"], "Is the Great Wall of China really visible from the Moon? Astronauts say so")
    cands = review(served, keys["ana"], post_id)["candidates"]
    from api.desk.present import shown_count
    from plugin.settings import Settings

    shown = shown_count(cands, Settings().desk_fold_ratio)
    assert 0 < shown < len(cands), f"this post's candidates fold nothing: {[c['confidence'] for c in cands]}"
    page = context.new_page()
    sign_in(page, keys["ana"])
    it = item(page, post_id)
    more = it.locator("details.more")
    assert more.locator("summary").inner_text() == f"{len(cands) - shown} more, far less likely"
    visible = it.locator("li.candidate:visible")
    assert visible.count() == shown
    folded = more.locator("li.candidate").first
    assert not folded.is_visible()
    # a folded candidate's key does nothing while it is folded (a key clicks only what is shown)
    it.focus()
    if shown + 1 <= 5:
        page.keyboard.press(str(shown + 1))
        time.sleep(0.3)
        assert item(page, post_id).get_attribute("data-status") == "pending"
    page.keyboard.press("m")
    assert folded.is_visible() and visible.count() == len(cands)
    page.keyboard.press("m")
    assert not folded.is_visible()
