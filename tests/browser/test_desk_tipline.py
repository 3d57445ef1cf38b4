"""A tipline's unsure messages answered from the desk, in chromium: two users ask about one rumour
on Telegram (the fake Bot API), FactSieve is not sure and tells both the desk will look into it;
a reviewer confirms the claim's fact-check in the desk; both users get the answer, once each."""
from __future__ import annotations

import time
import uuid

import pytest
import requests

from plugin.service.keys import Scope
from tests.browser.conftest import sign_in
from tests.integration.conftest import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.browser]

ASKS = ("BREAKING: 5G masts are spreading the coronavirus!!",
        "RT @newsdesk: BREAKING: 5G masts are spreading the coronavirus!! https://t.co/x1")


def ask(served: str, channel: dict, chat: int, text: str) -> None:
    update = {"update_id": uuid.uuid4().int % 10**9, "message": {
        "message_id": 1, "from": {"id": chat, "is_bot": False, "first_name": "U", "language_code": "en"},
        "chat": {"id": chat, "type": "private"}, "date": int(time.time()), "text": text}}
    resp = requests.post(f"{served}{channel['webhook_path']}", json=update, timeout=30,
                         headers={"X-Telegram-Bot-Api-Secret-Token": channel["secret_token"]})
    assert resp.status_code == 200 and resp.json()["taken"] == 1, resp.text


def test_the_desk_confirms_a_claim_and_everyone_who_asked_is_answered(context, served, desk_services, channel_fakes):
    tenant = f"desk-t-{uuid.uuid4().hex[:6]}"
    key = desk_services.keys.create("Tia Tipline", Scope.WRITE, tenant)[1]
    made, secrets = desk_services.channels.create("telegram", tenant, "tipline", {"bot_token": "9:desk", "threshold": 1.0})
    channel = {**made.public(), **secrets}
    chats = [uuid.uuid4().int % 10**9 for _ in ASKS]
    for chat, text in zip(chats, ASKS):
        ask(served, channel, chat, text)
        wait_for(lambda c=chat: channel_fakes.to(c) or None, timeout=120, what="the first reply")
        assert "look into it" in channel_fakes.to(chat)[0]["text"]

    # the claims list is a search: a new claim joins it at the claims index's next refresh, so
    # wait for it there (one claim, both askers' posts) before the page is asked to show it
    def listed() -> bool:
        body = requests.get(f"{served}/v1/claims", headers={"Authorization": f"Bearer {key}"}, timeout=30).json()
        return [c["post_count"] for c in body["claims"]] == [2] or None

    wait_for(listed, timeout=30, interval=0.2, what="one claim of two posts in GET /v1/claims")
    page = context.new_page()
    sign_in(page, key)
    page.get_by_role("link", name="Claims").click()
    page.wait_for_url("**/desk/claims")
    rows = page.locator("li.claim-row")
    wait_for(lambda: rows.count() == 1 or None, what="one claim")
    assert "2 posts" in rows.first.locator(".posts").inner_text()
    rows.first.get_by_role("link").click()
    with page.expect_navigation():
        page.locator("form.claim-decide button.confirm").first.click()
    assert "Claim decided" in page.locator("#messages").inner_text()

    for chat in chats:
        got = wait_for(lambda c=chat: (m if len(m := channel_fakes.to(c)) >= 2 else None), timeout=60,
                       what="the desk's answer")
        assert "Our team found this fact-check" in got[1]["text"]
        assert "5G mobile networks spread the coronavirus." in got[1]["text"]
    time.sleep(2)
    assert [len(channel_fakes.to(c)) for c in chats] == [2, 2]  # once each
