"""The channels' wire formats, as the official docs show them (pure): Telegram updates and
answers, WhatsApp notifications, signatures, the handshake and answers; the strings' fallbacks;
the messages and WhatsApp's 24-hour window."""
from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from plugin.channels import messages, strings, telegram, whatsapp
from plugin.channels.records import Action, Button, Channel, Kind, Outgoing
from plugin.channels.wire import feedback_id, feedback_of, is_stop


def tg(message: dict | None = None, **extra) -> dict:
    return {"update_id": 10000, **({"message": message} if message else {}), **extra}


CHAT = {"id": 1111111, "type": "private", "first_name": "Ana"}
FROM = {"id": 1111111, "is_bot": False, "first_name": "Ana", "language_code": "es"}


def test_telegram_messages_photos_forwards_and_commands():
    [text] = telegram.parse_update(tg({"message_id": 1365, "from": FROM, "chat": CHAT, "date": 1441645532,
                                       "text": "5G spreads the virus"}))
    assert (text.action, text.key, text.user, text.lang, text.text) == (Action.MESSAGE, "u10000", "1111111", "es",
                                                                         "5G spreads the virus")
    [photo] = telegram.parse_update(tg({"message_id": 2, "from": FROM, "chat": CHAT, "date": 1, "caption": "look",
                                        "forward_origin": {"type": "user", "date": 1},
                                        "photo": [{"file_id": "small", "file_unique_id": "a", "width": 90, "height": 51},
                                                  {"file_id": "big", "file_unique_id": "b", "width": 1280, "height": 720}]}))
    assert photo.media == "big" and photo.text == "look" and photo.forwarded
    assert telegram.parse_update(tg({"message_id": 3, "chat": CHAT, "date": 1, "text": "/stop"}))[0].action is Action.STOP
    assert telegram.parse_update(tg({"message_id": 3, "chat": CHAT, "date": 1, "text": "STOP"}))[0].action is Action.STOP
    assert telegram.parse_update(tg({"message_id": 4, "chat": CHAT, "date": 1, "text": "/start"}))[0].action is Action.START
    # a photo sent as a file is read as a photo; a voice note, a sticker, a PDF are told what is read
    [as_file] = telegram.parse_update(tg({"message_id": 5, "chat": CHAT, "date": 1, "document": {
        "file_id": "doc1", "file_unique_id": "d", "mime_type": "image/jpeg", "file_name": "meme.jpg"}}))
    assert (as_file.action, as_file.media) == (Action.MESSAGE, "doc1")
    for media in ({"voice": {"file_id": "v", "duration": 3}}, {"sticker": {"file_id": "x"}},
                  {"document": {"file_id": "p", "mime_type": "application/pdf"}}, {"location": {"latitude": 1}}):
        [odd] = telegram.parse_update(tg({"message_id": 5, "chat": CHAT, "date": 1, **media}))
        assert odd.action is Action.UNSUPPORTED and odd.user == "1111111"
    # nothing to act on: an empty text, a service message, an edit, another shape
    assert telegram.parse_update(tg({"message_id": 5, "chat": CHAT, "date": 1, "text": "  "})) == []
    assert telegram.parse_update(tg({"message_id": 5, "chat": CHAT, "date": 1, "new_chat_title": "x"})) == []
    assert telegram.parse_update(tg(edited_message={"message_id": 6, "chat": CHAT, "date": 1, "text": "x"})) == []
    for junk in (None, [], "x", {"update_id": "1"}, {"update_id": 1, "message": {"chat": "x"}}):
        assert telegram.parse_update(junk) == []


def test_telegram_feedback_buttons_round_trip():
    button = feedback_id("tg-ch_0123456789abcdef-u123456789", False)
    assert len(button.encode()) <= telegram.MAX_CALLBACK
    [fb] = telegram.parse_update({"update_id": 7, "callback_query": {
        "id": "4382bfdwdsb323b2d9", "from": FROM, "data": button,
        "message": {"message_id": 9, "chat": CHAT, "date": 5}}})
    assert (fb.action, fb.post_id, fb.helped) == (Action.FEEDBACK, "tg-ch_0123456789abcdef-u123456789", False)
    assert feedback_of("h1:p") == ("p", True) and feedback_of("other") is None and feedback_of("h2:p") is None
    # the press is answered in the webhook's reply; nothing else is
    assert telegram.callback_answer({"update_id": 7, "callback_query": {"id": "4382bfdwdsb323b2d9"}}) == {
        "method": "answerCallbackQuery", "callback_query_id": "4382bfdwdsb323b2d9"}
    for other in ({"update_id": 8, "message": {"chat": CHAT}}, {"callback_query": {"id": 5}}, [], None,
                  {"callback_query": {"id": "x" * 300}}):
        assert telegram.callback_answer(other) is None


def test_telegram_sends_and_answers():
    method, body = telegram.send_call("42", Outgoing("hi", (Button("h1:p", "Yes"), Button("h0:p", "No"))))
    assert method == "sendMessage" and body["chat_id"] == "42" and body["text"] == "hi"
    assert body["reply_markup"] == {"inline_keyboard": [[{"text": "Yes", "callback_data": "h1:p"},
                                                         {"text": "No", "callback_data": "h0:p"}]]}
    assert telegram.judge(200, b'{"ok":true,"result":{"message_id":1}}').ok
    limited = telegram.judge(429, b'{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 35",'
                                  b'"parameters":{"retry_after":35}}')
    assert not limited.ok and limited.retry_in == 35.0
    blocked = telegram.judge(403, b'{"ok":false,"error_code":403,"description":"Forbidden: bot was blocked by the user"}')
    assert blocked.retry_in is None and blocked.blocked
    assert telegram.judge(502, b"<html>").retry_in == 0.0
    assert telegram.judge(400, b'{"ok":false,"error_code":400,"description":"Bad Request: chat not found"}').retry_in is None


def wa_body(*messages: dict, phone_number_id: str = "106540352242922") -> dict:
    return {"object": "whatsapp_business_account", "entry": [{"id": "102290129340398", "changes": [{"field": "messages", "value": {
        "messaging_product": "whatsapp", "metadata": {"display_phone_number": "15550783881", "phone_number_id": phone_number_id},
        "contacts": [{"profile": {"name": "Sheena Nelson"}, "wa_id": "16505551234"}], "messages": list(messages)}}]}]}


def test_whatsapp_notifications():
    text = {"from": "16505551234", "id": "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=",
            "timestamp": "1749416383", "type": "text", "text": {"body": "Does 5G spread covid?"}}
    image = {"from": "16505551234", "id": "wamid.2", "timestamp": "1749416383", "type": "image",
             "context": {"forwarded": True}, "image": {"caption": "seen this?", "mime_type": "image/jpeg", "sha256": "x",
                                                       "id": "1003383421387256"}}
    reply = {"from": "16505551234", "id": "wamid.3", "timestamp": "1", "type": "interactive",
             "interactive": {"type": "button_reply", "button_reply": {"id": "h0:wa-ch_1-m1", "title": "No"}}}
    stop = {"from": "16505551234", "id": "wamid.4", "timestamp": "1", "type": "text", "text": {"body": "STOP"}}
    got = whatsapp.parse_notification(wa_body(text, image, reply, stop), "106540352242922")
    assert [g.action for g in got] == [Action.MESSAGE, Action.MESSAGE, Action.FEEDBACK, Action.STOP]
    assert got[0].text == "Does 5G spread covid?" and got[0].at == 1749416383.0 and got[0].user == "16505551234"
    assert got[1].media == "1003383421387256" and got[1].forwarded and got[1].text == "seen this?"
    assert (got[2].post_id, got[2].helped) == ("wa-ch_1-m1", False)
    assert len({g.key for g in got}) == 4
    # a photo sent as a file is read as a photo; a voice note or a PDF is told what is read
    doc = {"from": "16505551234", "id": "wamid.5", "timestamp": "1", "type": "document",
           "document": {"id": "777", "mime_type": "image/png", "filename": "meme.png"}}
    voice = {"from": "16505551234", "id": "wamid.6", "timestamp": "1", "type": "audio",
             "audio": {"id": "888", "mime_type": "audio/ogg; codecs=opus", "voice": True}}
    pdf = {**doc, "id": "wamid.7", "document": {"id": "999", "mime_type": "application/pdf"}}
    got = whatsapp.parse_notification(wa_body(doc, voice, pdf), "106540352242922")
    assert [(g.action, g.media) for g in got] == [(Action.MESSAGE, "777"), (Action.UNSUPPORTED, None),
                                                  (Action.UNSUPPORTED, None)]
    # another number's messages, statuses, junk: nothing
    assert whatsapp.parse_notification(wa_body(text), "999") == []
    status = {"entry": [{"changes": [{"value": {"metadata": {"phone_number_id": "1"}, "statuses": [{"id": "x"}]}}]}]}
    for junk in (status, None, [], {"entry": "x"}, {"entry": [{"changes": [{"value": {"messages": [{"id": 1}]}}]}]}):
        assert whatsapp.parse_notification(junk, "1") == []


def test_whatsapp_signature_and_handshake():
    raw = json.dumps(wa_body()).encode()
    good = "sha256=" + hmac.new(b"app-secret", raw, hashlib.sha256).hexdigest()
    assert whatsapp.signature_ok("app-secret", raw, good)
    assert not whatsapp.signature_ok("app-secret", raw + b" ", good)
    assert not whatsapp.signature_ok("other", raw, good)
    for header in (None, "", good[7:], "sha1=" + good[7:]):
        assert not whatsapp.signature_ok("app-secret", raw, header)
    params = {"hub.mode": "subscribe", "hub.verify_token": "tok", "hub.challenge": "1158201444"}
    assert whatsapp.challenge(params, "tok") == "1158201444"
    assert whatsapp.challenge({**params, "hub.verify_token": "no"}, "tok") is None
    assert whatsapp.challenge({**params, "hub.mode": "unsubscribe"}, "tok") is None
    assert whatsapp.challenge(params, "") is None


def test_whatsapp_sends_and_answers():
    text = whatsapp.send_body("16505551234", Outgoing("hello"))
    assert text == {"messaging_product": "whatsapp", "recipient_type": "individual", "to": "16505551234",
                    "type": "text", "text": {"preview_url": False, "body": "hello"}}
    buttons = whatsapp.send_body("1", Outgoing("q", (Button("h1:p", "Yes, thanks a lot really"), Button("h0:p", "No"))))
    assert buttons["type"] == "interactive"
    assert [b["reply"]["title"] for b in buttons["interactive"]["action"]["buttons"]] == ["Yes, thanks a lot re", "No"]
    tpl = whatsapp.send_body("1", Outgoing("", template={"name": "answer", "lang": "en_US", "params": ["a", "b"]}))
    assert tpl["template"] == {"name": "answer", "language": {"code": "en_US"}, "components": [
        {"type": "body", "parameters": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]}
    assert whatsapp.judge(200, b'{"messaging_product":"whatsapp","messages":[{"id":"wamid.x"}]}').ok
    limited = whatsapp.judge(400, b'{"error":{"message":"(#130429) Rate limit hit","code":130429}}')
    assert not limited.ok and limited.retry_in == 10.0 and "130429" in limited.why
    window = whatsapp.judge(400, b'{"error":{"message":"Re-engagement message","code":131047}}')
    assert window.retry_in is None
    assert whatsapp.judge(503, b"").retry_in == 0.0


def channel(kind: Kind = Kind.WHATSAPP, template: dict | None = None) -> Channel:
    return Channel("ch_0123456789abcdef", "t", kind, "n", "2026-11-28", template=template, user_salt="salt")


def test_the_window_and_the_desks_answer():
    fc = {"id": "f1", "claim": "5G spreads the virus", "rating": "False", "url": "https://x.org/a", "publisher": "X"}
    words = strings.load()
    wa = channel(template={"name": "ready", "lang": "en_US"})
    assert messages.window_open(wa, 1000.0, 1000.0 + 23 * 3600) and not messages.window_open(wa, 1000.0, 1000.0 + 25 * 3600)
    assert not messages.window_open(wa, None, 0) and messages.window_open(channel(Kind.TELEGRAM), None, 10**10)
    inside = messages.desk_answer(words, wa, "en", fc, "p1", True)
    assert inside is not None and inside.template is None and "5G spreads the virus" in inside.text and inside.buttons
    outside = messages.desk_answer(words, wa, "en", fc, "p1", False)
    assert outside is not None and outside.text == "" and outside.template == {
        "name": "ready", "lang": "en_US", "params": ["5G spreads the virus", "False", "https://x.org/a"]}
    assert messages.desk_answer(words, channel(), "en", fc, "p1", False) is None  # no template: nothing


def test_strings_fall_back_to_the_default_language_then_english(tmp_path):
    words = strings.load()
    assert strings.language(words, "t", "es-MX", "en") == "es"
    assert strings.language(words, "t", "de", "ko") == "ko"
    assert strings.language(words, "t", None, "xx") == "en"
    assert "Nuestro" in strings.text(words, "t", "es", "desk_will_look")
    assert set(strings.KEYS) == set(words["default"]["en"]) == set(words["default"]["es"]) == set(words["default"]["ko"])
    mine = tmp_path / "strings.json"
    mine.write_text(json.dumps({"tenants": {"t": {"de": {"thanks": "Danke!"}, "en": {"thanks": "Cheers"}}}}))
    words = strings.load(str(mine))
    assert strings.text(words, "t", "de", "thanks") == "Danke!"
    assert strings.text(words, "t", "de", "yes") == "Yes, thanks"  # the tenant's English, then the default's
    assert strings.text(words, "other", "en", "thanks") == "Thank you for telling us."
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"tenants": {"t": {"en": {"thank": "typo"}}}}))
    with pytest.raises(Exception, match="unknown keys"):
        strings.load(str(bad))


def test_a_user_is_stored_as_a_keyed_hash():
    ch = channel()
    assert ch.user_key("16505551234") == ch.user_key("16505551234") != ch.user_key("16505551235")
    assert "16505551234" not in ch.user_key("16505551234")
    other = Channel("ch_0123456789abcdef", "t", Kind.WHATSAPP, "n", "x", user_salt="pepper")
    assert other.user_key("16505551234") != ch.user_key("16505551234")
    assert "secrets" not in ch.public() and "user_salt" not in ch.public()


@pytest.mark.parametrize("word", ["/stop", "STOP", " Stop ", "/stop@factsieve_bot", "parar", "중지"])
def test_stop_words(word):
    assert is_stop(word)
