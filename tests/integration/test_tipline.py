"""Tiplines end to end: the fake Telegram and WhatsApp APIs (``plugin.lab.channel_fakes``) send updates as the
official docs show to the real API; a real worker matches each message on the post path over the
real OpenSearch and Redis and answers through the fakes. Sure answers, a photo, the desk's answer
to everyone who asked, WhatsApp's 24-hour window, forged requests, retried updates, /stop."""
from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid

import pytest

from tests.image_drawing import card, encode
from tests.integration.conftest import problem_of, wait_for

pytestmark = pytest.mark.integration

FIVE_G = "BREAKING: 5G masts are spreading the coronavirus!!"
RETWEET = "RT @newsdesk: BREAKING: 5G masts are spreading the coronavirus!! https://t.co/x1"


@pytest.fixture(scope="module")
def admin(api_services):
    from plugin.service.keys import Scope

    return {"Authorization": f"Bearer {api_services.keys.create('tipline admin', Scope.ADMIN)[1]}"}


@pytest.fixture
def channel(client, admin):
    """Add a channel for a fresh tenant: ``channel(kind, **fields)`` → the API's answer."""
    def add(kind: str = "telegram", **fields) -> dict:
        body = {"kind": kind, "name": f"test {kind}", "tenant": f"tip-{uuid.uuid4().hex[:8]}", **fields}
        if kind == "telegram":
            body.setdefault("bot_token", f"{uuid.uuid4().int % 10**9}:AAtest")
        else:
            body.update(access_token="EAAtest", app_secret="s3cret", phone_number_id=str(uuid.uuid4().int % 10**12))
        resp = client.post("/v1/channels", json=body, headers=admin)
        assert resp.status_code == 201, resp.data
        return resp.get_json()

    return add


def tg_update(chat: int, text: str | None = None, photo: str | None = None, *, update_id: int | None = None,
              lang: str = "en") -> dict:
    msg: dict = {"message_id": 7, "from": {"id": chat, "is_bot": False, "first_name": "Ana", "language_code": lang},
                 "chat": {"id": chat, "first_name": "Ana", "type": "private"}, "date": int(time.time())}
    if photo:
        msg["photo"] = [{"file_id": photo + "-small", "file_unique_id": "s", "width": 90, "height": 67, "file_size": 900},
                        {"file_id": photo, "file_unique_id": "l", "width": 800, "height": 600, "file_size": 30000}]
        if text:
            msg["caption"] = text
    elif text is not None:
        msg["text"] = text
    return {"update_id": update_id or uuid.uuid4().int % 10**9, "message": msg}


def send_tg(client, ch: dict, update: dict, secret: str | None = None):
    return client.post(ch["webhook_path"], json=update,
                       headers={"X-Telegram-Bot-Api-Secret-Token": secret or ch["secret_token"]})


def wa_notification(ch: dict, phone: str, text: str | None = None, *, at: float | None = None,
                    button: str | None = None) -> dict:
    msg: dict = {"from": phone, "id": f"wamid.{uuid.uuid4().hex}", "timestamp": str(int(at or time.time()))}
    if button:
        msg.update(type="interactive", interactive={"type": "button_reply", "button_reply": {"id": button, "title": "No"}})
    else:
        msg.update(type="text", text={"body": text})
    return {"object": "whatsapp_business_account", "entry": [{"id": "WABA", "changes": [{"field": "messages", "value": {
        "messaging_product": "whatsapp", "metadata": {"display_phone_number": "15550001111", "phone_number_id": ch["phone_number_id"]},
        "contacts": [{"profile": {"name": "Ana"}, "wa_id": phone}], "messages": [msg]}}]}]}


def send_wa(client, ch: dict, payload: dict, secret: str = "s3cret"):
    raw = json.dumps(payload).encode()
    sig = "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
    return client.post(ch["webhook_path"], data=raw, content_type="application/json",
                       headers={"X-Hub-Signature-256": sig})


def messages_to(fakes, chat, n: int = 1, timeout: float = 90.0, worker=None) -> list[dict]:
    """The first ``n`` messages to ``chat``; on a timeout with ``worker``, the error shows the
    worker's tipline lines and warnings (what CI prints is all there is to go on)."""
    try:
        return wait_for(lambda: (got if len(got := fakes.to(chat)) >= n else None), timeout=timeout,
                        what=f"{n} message(s) to {chat}")
    except AssertionError as exc:
        if worker is None:
            raise
        lines = [line for line in worker.log_path.read_text(errors="replace").splitlines()
                 if any(w in line for w in ("WARNING", "ERROR", "answer_askers", "send_channel_message"))]
        raise AssertionError(f"{exc}; got {fakes.to(chat)}; the worker's last lines:\n" + "\n".join(lines[-30:])) from None


def one_claim_of_two(client, desk: dict, what: str) -> list[dict]:
    def listed() -> list[dict] | None:
        claims = client.get("/v1/claims", headers=desk).get_json()["claims"]
        return claims if [c["post_count"] for c in claims] == [2] else None

    return wait_for(listed, timeout=30, what=what)


def test_a_sure_text_message_is_answered_with_its_fact_check(client, channel, worker, channel_fakes, api_services):
    ch = channel(threshold=0.3)
    chat = uuid.uuid4().int % 10**9
    resp = send_tg(client, ch, tg_update(chat, FIVE_G))
    assert resp.status_code == 200 and resp.get_json() == {"ok": True, "taken": 1, "repeated": 0}, resp.data
    [answer] = messages_to(channel_fakes, chat)
    assert "5G mobile networks spread the coronavirus." in answer["text"] and "Pants on Fire" in answer["text"]
    assert "https://checks.example.org/5g-coronavirus" in answer["text"]
    buttons = answer["reply_markup"]["inline_keyboard"][0]
    assert [b["text"] for b in buttons] == ["Yes, thanks", "No"]
    # "helped" is the request's outcome; the user is thanked
    fb = {"update_id": uuid.uuid4().int % 10**9, "callback_query": {
        "id": "cb1", "from": {"id": chat, "language_code": "en"}, "data": buttons[0]["callback_data"],
        "message": {"message_id": 9, "chat": {"id": chat, "type": "private"}, "date": int(time.time())}}}
    resp = send_tg(client, ch, fb)
    assert resp.status_code == 200
    # the press is answered in the webhook's reply (Telegram runs the method it names)
    assert resp.get_json() == {"ok": True, "taken": 1, "repeated": 0, "method": "answerCallbackQuery",
                               "callback_query_id": "cb1"}
    assert "Thank you" in messages_to(channel_fakes, chat, 2)[1]["text"]
    # ... and a decision of the public's on the post, beside the desk's: the item stays pending
    from plugin.service.keys import Scope

    _, key = api_services.keys.create("tipline desk", Scope.READ, ch["tenant"])
    post_id = f"tg-{ch['id']}-u{buttons[0]['callback_data'].rsplit('-u', 1)[1]}"
    item = client.get(f"/v1/review/{post_id}", headers={"Authorization": f"Bearer {key}"}).get_json()
    assert item["status"] == "pending"
    [said] = item["decisions"]
    assert (said["origin"], said["action"], said["factcheck_id"]) == ("tipline", "confirm", "api-2")
    assert said["actor"].startswith("tipline:") and str(chat) not in said["actor"]


def test_a_photo_of_a_fact_checked_meme_is_answered(client, channel, worker, channel_fakes):
    ch = channel(threshold=0.3)
    chat = uuid.uuid4().int % 10**9
    file_id = f"AgAC{uuid.uuid4().hex[:10]}"
    channel_fakes.files[file_id] = encode(card("5G mobile networks spread the coronavirus. Wake up!"))
    assert send_tg(client, ch, tg_update(chat, photo=file_id)).status_code == 200
    checking, answer = messages_to(channel_fakes, chat, 2, timeout=150)
    assert "checking" in checking["text"]
    assert "5G mobile networks spread the coronavirus." in answer["text"]


def test_forged_updates_are_refused_and_write_nothing(client, channel, api_services, channel_fakes):
    tg = channel()
    chat = uuid.uuid4().int % 10**9
    update = tg_update(chat, FIVE_G)
    for secret in ("wrong", ""):
        resp = client.post(tg["webhook_path"], json=update, headers={"X-Telegram-Bot-Api-Secret-Token": secret})
        assert resp.status_code == 401 and problem_of(resp)
    assert client.post(tg["webhook_path"], json=update).status_code == 401
    wa = channel("whatsapp")
    payload = wa_notification(wa, "34600000001", FIVE_G)
    assert send_wa(client, wa, payload, secret="not-the-app-secret").status_code == 401
    raw = json.dumps(payload).encode()
    assert client.post(wa["webhook_path"], data=raw, content_type="application/json").status_code == 401
    # nothing was written: no post job, and the same updates, signed, are still new
    post_id = f"tg-{tg['id']}-u{update['update_id']}"
    from plugin.errors import NotFound

    with pytest.raises(NotFound):
        api_services.jobs.get(api_services.jobs.post_job(post_id, tg["tenant"]))
    assert send_tg(client, tg, update).get_json()["taken"] == 1
    assert send_wa(client, wa, payload).get_json()["taken"] == 1
    # an unknown channel is a 404; WhatsApp's handshake answers only its own token
    assert client.post("/v1/channels/telegram/ch_0000000000000000", json=update).status_code == 404
    ok = client.get(f"{wa['webhook_path']}?hub.mode=subscribe&hub.verify_token={wa['verify_token']}&hub.challenge=1158201444")
    assert ok.status_code == 200 and ok.data == b"1158201444"
    bad = client.get(f"{wa['webhook_path']}?hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1")
    assert bad.status_code == 401


def test_a_retried_update_is_processed_once(client, channel, worker, channel_fakes):
    ch = channel(threshold=0.3)
    chat = uuid.uuid4().int % 10**9
    update = tg_update(chat, FIVE_G)
    assert send_tg(client, ch, update).get_json()["taken"] == 1
    assert send_tg(client, ch, update).get_json() == {"ok": True, "taken": 0, "repeated": 1}
    messages_to(channel_fakes, chat)
    time.sleep(2)
    assert len(channel_fakes.to(chat)) == 1


def test_the_desk_answers_everyone_who_asked_and_the_window_forces_a_template(
        client, channel, worker, channel_fakes, api_services):
    from plugin.service.keys import Scope

    # a tipline whose threshold no match reaches (confidence stops at 0.999): all goes to the desk
    tg = channel(threshold=1.0)
    ana, ben = uuid.uuid4().int % 10**9, uuid.uuid4().int % 10**9
    assert send_tg(client, tg, tg_update(ana, FIVE_G)).status_code == 200
    assert "look into it" in messages_to(channel_fakes, ana)[0]["text"]
    assert send_tg(client, tg, tg_update(ben, RETWEET, lang="es")).status_code == 200
    assert "Nuestro equipo" in messages_to(channel_fakes, ben)[0]["text"]  # Ben's app speaks Spanish

    # the desk confirms the claim both asked about: each gets the answer, once
    _, key = api_services.keys.create("tipline desk", Scope.WRITE, tg["tenant"])
    desk = {"Authorization": f"Bearer {key}"}
    [claim] = one_claim_of_two(client, desk, "one claim of both posts")
    resp = client.post(f"/v1/claims/{claim['id']}/decision", json={"action": "confirm", "factcheck_id": "api-2"},
                       headers=desk)
    assert resp.status_code == 200 and len(resp.get_json()["decisions"]) == 2, resp.data
    for chat in (ana, ben):
        answer = messages_to(channel_fakes, chat, 2)[1]
        assert "5G mobile networks spread the coronavirus." in answer["text"]
    # a later asker about the answered claim gets it at once, sure whatever the threshold
    cyd = uuid.uuid4().int % 10**9
    send_tg(client, tg, tg_update(cyd, "5G masts are spreading the coronavirus!! 😡"))
    assert "5G mobile networks spread the coronavirus." in messages_to(channel_fakes, cyd)[0]["text"]
    time.sleep(2)
    assert len(channel_fakes.to(ana)) == 2 and len(channel_fakes.to(ben)) == 2

    # WhatsApp: a user whose last message is 25 hours old gets the template, never free text;
    # a channel without a template sends nothing and says why
    wa = channel("whatsapp", threshold=1.0, template={"name": "factcheck_ready", "lang": "en_US"})
    old, late = "34600000002", "34600000003"
    assert send_wa(client, wa, wa_notification(wa, old, FIVE_G, at=time.time() - 25 * 3600)).status_code == 200
    messages_to(channel_fakes, old)
    assert send_wa(client, wa, wa_notification(wa, late, RETWEET)).status_code == 200
    messages_to(channel_fakes, late)
    _, key = api_services.keys.create("tipline desk", Scope.WRITE, wa["tenant"])
    desk = {"Authorization": f"Bearer {key}"}
    [claim] = one_claim_of_two(client, desk, "one WhatsApp claim of both posts")
    resp = client.post(f"/v1/claims/{claim['id']}/decision", json={"action": "confirm", "factcheck_id": "api-2"},
                       headers=desk)
    assert resp.status_code == 200 and len(resp.get_json()["decisions"]) == 2, resp.data
    template = messages_to(channel_fakes, old, 2, worker=worker)[1]
    assert template["type"] == "template" and template["template"]["name"] == "factcheck_ready"
    assert template["template"]["components"][0]["parameters"][0]["text"] == "5G mobile networks spread the coronavirus."
    inside = messages_to(channel_fakes, late, 2)[1]
    assert inside["type"] == "interactive" and "5G mobile" in inside["interactive"]["body"]["text"]


def test_stop_is_honoured_and_the_user_forgotten(client, channel, worker, channel_fakes, api_services):
    from plugin.service.keys import Scope

    tg = channel(threshold=1.0)
    chat = uuid.uuid4().int % 10**9
    send_tg(client, tg, tg_update(chat, FIVE_G))
    messages_to(channel_fakes, chat)
    assert send_tg(client, tg, tg_update(chat, "/stop")).status_code == 200
    assert "no more messages" in messages_to(channel_fakes, chat, 2)[1]["text"]
    ch = api_services.channels.find(tg["id"])
    user = api_services.channels.user(ch, ch.user_key(str(chat)))
    assert user.get("stopped") == "1" and "chat" not in user
    # the desk answers the claim later: nothing is sent to a user who stopped
    _, key = api_services.keys.create("tipline desk", Scope.WRITE, tg["tenant"])
    desk = {"Authorization": f"Bearer {key}"}
    wait_for(lambda: client.get("/v1/claims", headers=desk).get_json()["total"] == 1 or None, timeout=30,
             what="the claim")
    [claim] = client.get("/v1/claims", headers=desk).get_json()["claims"]
    assert client.post(f"/v1/claims/{claim['id']}/decision", json={"action": "confirm", "factcheck_id": "api-2"},
                       headers=desk).status_code == 200
    time.sleep(3)
    assert len(channel_fakes.to(chat)) == 2
    # a message already queued when the user stopped is never sent; the stop's confirmation is
    from plugin.channels import outbox
    from plugin.channels.records import Outgoing

    other = uuid.uuid4().int % 10**9
    who = api_services.channels.touch(ch, str(other), time.time(), "en")
    queued = api_services.channels.plan(ch, str(other), who, Outgoing("an answer, queued"), f"q:{other}")
    api_services.channels.stop(ch, who)
    confirm = api_services.channels.plan(ch, str(other), who, Outgoing("stopped"), f"stop:{other}")
    for mid in (queued, confirm):
        assert outbox.attempt(api_services.settings, api_services.channels, mid) is None
    assert api_services.channels.item(queued)["error"] == "the user stopped"
    assert [m["text"] for m in channel_fakes.to(other)] == ["stopped"]


def test_channels_are_managed_by_admins_and_never_show_their_secrets(client, channel, admin, auth, api_services):
    ch = channel()
    chat = uuid.uuid4().int % 10**9
    assert send_tg(client, ch, tg_update(chat, "/start")).status_code == 200  # a user the channel knows
    stored = api_services.channels.find(ch["id"])
    kv, user = api_services.channels.kv, stored.user_key(str(chat))
    listed = client.get("/v1/channels", headers=admin).get_json()["channels"]
    mine = next(c for c in listed if c["id"] == ch["id"])
    text = json.dumps(listed)
    assert "AAtest" not in text and ch["secret_token"] not in text and "secret_token" not in mine
    shown = client.get(f"/v1/channels/{ch['id']}", headers=admin)
    assert shown.status_code == 200 and "AAtest" not in shown.get_data(as_text=True)
    assert client.get("/v1/channels", headers=auth).status_code == 403  # a write key is not an admin
    bad = client.post("/v1/channels", json={"kind": "telegram", "name": "no token"}, headers=admin)
    assert bad.status_code == 422 and problem_of(bad)
    assert client.post("/v1/channels", json={"kind": "signal", "name": "x"}, headers=admin).status_code == 422
    assert kv.client.exists(kv.key("tipuser", ch["id"], user))
    assert client.delete(f"/v1/channels/{ch['id']}", headers=admin).status_code == 204
    # removed: its users (and their raw ids) and its outcomes are forgotten
    assert not kv.client.exists(kv.key("tipuser", ch["id"], user), kv.key("tipusers", ch["id"]),
                                kv.key("tipevents", ch["id"]))
    assert client.delete(f"/v1/channels/{ch['id']}", headers=admin).status_code == 404
    assert send_tg(client, ch, tg_update(1, FIVE_G)).status_code == 404


def test_rate_limits_are_waited_out(client, channel, worker, channel_fakes):
    """Telegram's 429 with retry_after and WhatsApp's 130429 are retried after the wait: the
    answer arrives once."""
    tg = channel(threshold=0.3)
    chat = uuid.uuid4().int % 10**9
    channel_fakes.rate_limit(1)
    t0 = time.monotonic()
    send_tg(client, tg, tg_update(chat, FIVE_G))
    [answer] = messages_to(channel_fakes, chat)
    assert "5G mobile" in answer["text"] and time.monotonic() - t0 >= 1.0  # retry_after: 1
    wa = channel("whatsapp", threshold=0.3)
    phone = "34600000009"
    channel_fakes.rate_limit(1)
    send_wa(client, wa, wa_notification(wa, phone, FIVE_G))
    [answer] = messages_to(channel_fakes, phone)
    assert answer["type"] == "interactive" and "5G mobile" in answer["interactive"]["body"]["text"]
    time.sleep(1)
    assert len(channel_fakes.to(chat)) == 1 and len(channel_fakes.to(phone)) == 1


def test_an_unanswered_did_it_help_is_a_timeout_once(client, channel, worker, channel_fakes, api_services):
    """Check's ``timeout`` outcome: the workers' sweeper (``tipline.time_out``) records an answer
    whose "did it help?" went unanswered, once; an answer the user replied to is not one."""
    from plugin.service.tipline import time_out

    ch = channel(threshold=0.3)
    quiet, replies = uuid.uuid4().int % 10**9, uuid.uuid4().int % 10**9
    send_tg(client, ch, tg_update(quiet, FIVE_G))
    send_tg(client, ch, tg_update(replies, RETWEET))
    [answer] = messages_to(channel_fakes, replies)
    messages_to(channel_fakes, quiet)
    data = answer["reply_markup"]["inline_keyboard"][0][1]["callback_data"]  # "No"
    press = {"update_id": uuid.uuid4().int % 10**9, "callback_query": {
        "id": "cb2", "from": {"id": replies, "language_code": "en"}, "data": data,
        "message": {"message_id": 9, "chat": {"id": replies, "type": "private"}, "date": int(time.time())}}}
    assert send_tg(client, ch, press).status_code == 200
    stored = api_services.channels.find(ch["id"])
    assert time_out(api_services, 3600) == 0  # not an hour yet
    assert time_out(api_services, 0) >= 1
    outcomes = [(e["outcome"], e["user"]) for e in api_services.channels.events(stored)]
    timed = [u for o, u in outcomes if o == "timeout"]
    assert timed == [stored.user_key(str(quiet))], outcomes
    assert ("irrelevant", stored.user_key(str(replies))) in outcomes
    time_out(api_services, 0)  # a second sweep records nothing more of it
    assert [e["outcome"] for e in api_services.channels.events(stored)].count("timeout") == 1


def test_a_voice_note_is_told_what_the_tipline_reads(client, channel, worker, channel_fakes):
    ch = channel()
    chat = uuid.uuid4().int % 10**9
    update = tg_update(chat, lang="es")
    update["message"]["voice"] = {"file_id": "AwACvoice", "file_unique_id": "v", "duration": 4}
    resp = send_tg(client, ch, update)
    assert resp.status_code == 200 and resp.get_json()["taken"] == 1
    [told] = messages_to(channel_fakes, chat)
    assert "fotos" in told["text"]  # in the user's language

