"""Telegram's Bot API, as data (pure): an update read into ``Inbound`` records, a message written
as the ``sendMessage`` call, and the API's answer judged (sent, retry after ``retry_after``, or
failed for good). The calls themselves go through ``plugin.channels.outbox``.

Official shapes: https://core.telegram.org/bots/api (Update, Message, CallbackQuery, sendMessage,
getFile, answerCallbackQuery; a webhook set with ``secret_token`` sends it back in
``X-Telegram-Bot-Api-Secret-Token``)."""
from __future__ import annotations

import json
from typing import Any

from plugin.channels.records import Action, Inbound, Outgoing
from plugin.channels.wire import Result, feedback_of, is_stop

#: the header Telegram sends the webhook's ``secret_token`` back in
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
#: callback_data is at most 64 bytes
MAX_CALLBACK = 64
#: a Message's fields for what a user sends that the tipline cannot read (without a caption)
UNSUPPORTED = ("voice", "audio", "video", "video_note", "document", "sticker", "animation", "location",
               "venue", "contact", "poll", "dice")


def parse_update(update: Any) -> list[Inbound]:
    """What one update asks of the tipline (empty: nothing for it, e.g. an edit or a group
    join). Never raises on a well-formed JSON value of another shape."""
    if not isinstance(update, dict) or not isinstance(update.get("update_id"), int):
        return []
    key = f"u{update['update_id']}"
    cb = update.get("callback_query")
    if isinstance(cb, dict):
        chat = ((cb.get("message") or {}).get("chat") or {}).get("id", (cb.get("from") or {}).get("id"))
        fb = feedback_of(str(cb.get("data") or ""))
        if chat is None or fb is None:
            return []
        return [Inbound(Action.FEEDBACK, key, str(chat), float((cb.get("message") or {}).get("date") or 0),
                        lang=(cb.get("from") or {}).get("language_code"), post_id=fb[0], helped=fb[1])]
    msg = update.get("message")
    if not isinstance(msg, dict) or not isinstance(msg.get("chat"), dict) or "id" not in msg["chat"]:
        return []
    text = msg.get("text") if isinstance(msg.get("text"), str) else msg.get("caption")
    text = text if isinstance(text, str) else ""
    photos = [p for p in msg.get("photo") or [] if isinstance(p, dict) and p.get("file_id")]
    doc = msg.get("document") if isinstance(msg.get("document"), dict) else {}
    if not photos and str(doc.get("mime_type") or "").startswith("image/") and doc.get("file_id"):
        photos = [doc]  # a photo sent as a file (uncompressed): read like one
    common = {"key": key, "user": str(msg["chat"]["id"]), "at": float(msg.get("date") or 0),
              "lang": (msg.get("from") or {}).get("language_code")}
    if not photos:
        word = text.strip().split(" ")[0].split("@")[0].lower() if text.strip() else ""
        if is_stop(text):
            return [Inbound(Action.STOP, **common)]
        if word == "/start":
            return [Inbound(Action.START, **common)]
        if not text.strip():
            # something a user sent that the tipline cannot read (not a service message)
            return [Inbound(Action.UNSUPPORTED, **common)] if any(k in msg for k in UNSUPPORTED) else []
    # the largest size Telegram made (the list is smallest first)
    media = str(photos[-1]["file_id"]) if photos else None
    forwarded = any(k in msg for k in ("forward_origin", "forward_from", "forward_from_chat", "forward_date"))
    return [Inbound(Action.MESSAGE, text=text, media=media, forwarded=forwarded, **common)]


def callback_answer(update: Any) -> dict[str, str] | None:
    """The ``answerCallbackQuery`` a button press needs (its app shows a spinner until then), as
    the webhook's reply carries it (the Bot API runs a method named in a webhook's answer: no call
    of FactSieve's own); ``None`` for any other update."""
    cb = update.get("callback_query") if isinstance(update, dict) else None
    if not isinstance(cb, dict) or not isinstance(cb.get("id"), str) or not cb["id"] or len(cb["id"]) > 256:
        return None
    return {"method": "answerCallbackQuery", "callback_query_id": cb["id"]}


def send_call(chat: str, out: Outgoing) -> tuple[str, dict[str, Any]]:
    """``(method, body)`` of the Bot API call that sends ``out`` to ``chat``."""
    body: dict[str, Any] = {"chat_id": chat, "text": out.text, "link_preview_options": {"is_disabled": True}}
    if out.buttons:
        body["reply_markup"] = {"inline_keyboard": [[{"text": b.title, "callback_data": b.id[:MAX_CALLBACK]}
                                                     for b in out.buttons]]}
    return "sendMessage", body


def judge(status: int, body: bytes) -> Result:
    """The Bot API's answer to a call: ``ok``, or a retry after Telegram's ``retry_after`` (429)
    or after a server error, or a failure for good (a 400, a bot the user blocked: 403)."""
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        data = {}
    data = data if isinstance(data, dict) else {}
    if 200 <= status < 300 and data.get("ok", True):
        return Result(True, result=data.get("result"))
    why = str(data.get("description") or f"HTTP {status}")[:200]
    if status == 429:
        after = (data.get("parameters") or {}).get("retry_after")
        return Result(False, retry_in=float(after) if isinstance(after, (int, float)) else 5.0, why=why)
    if status >= 500:
        return Result(False, retry_in=0.0, why=why)
    return Result(False, why=why, blocked=status == 403)
