"""WhatsApp's Cloud API, as data (pure): the webhook's verification handshake and signature, a
notification read into ``Inbound`` records, a message written as the ``messages`` call (text,
reply buttons, or a template outside the 24-hour window), and the API's answer judged.

Official shapes: Meta's WhatsApp Cloud API reference (webhooks: ``hub.mode``/``hub.verify_token``/
``hub.challenge`` on GET, ``X-Hub-Signature-256: sha256=HMAC-SHA256(app secret, raw body)`` on
POST; ``/<phone number id>/messages``; ``/<media id>``)."""
from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from plugin.channels.records import Action, Inbound, Outgoing
from plugin.channels.wire import Result, feedback_of, is_stop

SIGNATURE_HEADER = "X-Hub-Signature-256"
#: the customer-service window: free text only this long after the user's last message
WINDOW_S = 24 * 3600
#: error codes worth another attempt (rate limits, a temporary failure), and after how long
RETRY_CODES = {130429: 10.0, 131056: 60.0, 4: 60.0, 80007: 60.0, 131000: 0.0, 2: 0.0, 1: 0.0}
#: the code for a free-text message outside the window (the code never sends one; Meta says so)
OUTSIDE_WINDOW = 131047
#: at most this many messages of one notification are taken (Meta batches a few)
MAX_MESSAGES = 50
#: message types a user sends that the tipline cannot read (told so; a document that is an image
#: is read as a photo)
UNSUPPORTED = ("audio", "video", "document", "sticker", "location", "contacts")
#: reply buttons: at most 3, titles of at most 20 characters
MAX_BUTTONS, MAX_TITLE = 3, 20


def signature_ok(app_secret: str, raw_body: bytes, header: str | None) -> bool:
    """Whether ``X-Hub-Signature-256`` is the body's HMAC-SHA256 with the app secret."""
    if not header or not header.startswith("sha256=") or not app_secret:
        return False
    want = hmac.new(app_secret.encode(), raw_body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(want, header[len("sha256="):].strip().lower())


def challenge(params: dict[str, str], verify_token: str) -> str | None:
    """The verification handshake's answer (the challenge), ``None`` when it is not ours."""
    if params.get("hub.mode") != "subscribe" or not verify_token:
        return None
    if not hmac.compare_digest(params.get("hub.verify_token") or "", verify_token):
        return None
    return params.get("hub.challenge") or None


def parse_notification(body: Any, phone_number_id: str | None) -> list[Inbound]:
    """What a notification asks of the tipline: its users' messages to ``phone_number_id``
    (delivery statuses and other fields are ignored)."""
    out: list[Inbound] = []
    entries = body.get("entry") if isinstance(body, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        for change in (entry.get("changes") or []) if isinstance(entry, dict) else []:
            value = change.get("value") if isinstance(change, dict) else None
            if not isinstance(value, dict):
                continue
            meta = value.get("metadata") or {}
            if phone_number_id and str(meta.get("phone_number_id") or "") != phone_number_id:
                continue
            for msg in value.get("messages") or []:
                one = _message(msg)
                if one is not None and len(out) < MAX_MESSAGES:
                    out.append(one)
    return out


def _message(msg: Any) -> Inbound | None:
    if not isinstance(msg, dict) or not msg.get("id") or not msg.get("from"):
        return None
    key = "m" + hashlib.sha256(str(msg["id"]).encode()).hexdigest()[:24]
    try:
        at = float(msg.get("timestamp") or 0)
    except (TypeError, ValueError):
        at = 0.0
    common = {"key": key, "user": str(msg["from"]), "at": at}
    kind = msg.get("type")
    forwarded = bool((msg.get("context") or {}).get("forwarded") or (msg.get("context") or {}).get("frequently_forwarded"))
    if kind == "text":
        text = str((msg.get("text") or {}).get("body") or "")
        if is_stop(text):
            return Inbound(Action.STOP, **common)
        return Inbound(Action.MESSAGE, text=text, forwarded=forwarded, **common) if text.strip() else None
    doc = msg.get("document") if kind == "document" and isinstance(msg.get("document"), dict) else {}
    if kind == "image" or str(doc.get("mime_type") or "").startswith("image/"):  # a photo sent as a file too
        image = (msg.get("image") or {}) if kind == "image" else doc
        if not image.get("id"):
            return None
        return Inbound(Action.MESSAGE, text=str(image.get("caption") or ""), media=str(image["id"]),
                       forwarded=forwarded, **common)
    if kind in UNSUPPORTED:
        return Inbound(Action.UNSUPPORTED, **common)
    button = None
    if kind == "interactive":
        button = ((msg.get("interactive") or {}).get("button_reply") or {}).get("id")
    elif kind == "button":
        button = (msg.get("button") or {}).get("payload")
    fb = feedback_of(str(button or ""))
    if fb is not None:
        return Inbound(Action.FEEDBACK, post_id=fb[0], helped=fb[1], **common)
    return None


def send_body(to: str, out: Outgoing) -> dict[str, Any]:
    """The ``messages`` call's body that sends ``out`` to ``to``."""
    base = {"messaging_product": "whatsapp", "recipient_type": "individual", "to": to}
    if out.template is not None:
        params = [{"type": "text", "text": str(p)[:1024]} for p in out.template.get("params") or []]
        template: dict[str, Any] = {"name": out.template["name"], "language": {"code": out.template["lang"]}}
        if params:
            template["components"] = [{"type": "body", "parameters": params}]
        return {**base, "type": "template", "template": template}
    if out.buttons:
        buttons = [{"type": "reply", "reply": {"id": b.id[:256], "title": b.title[:MAX_TITLE]}}
                   for b in out.buttons[:MAX_BUTTONS]]
        return {**base, "type": "interactive", "interactive": {
            "type": "button", "body": {"text": out.text[:1024]}, "action": {"buttons": buttons}}}
    return {**base, "type": "text", "text": {"preview_url": False, "body": out.text[:4096]}}


def judge(status: int, body: bytes) -> Result:
    """The Cloud API's answer: sent, a retry (rate limits, temporary errors, 5xx), or a failure
    for good, naming Meta's code."""
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        data = {}
    data = data if isinstance(data, dict) else {}
    if 200 <= status < 300 and "error" not in data:
        return Result(True, result=data)
    err = data.get("error") if isinstance(data.get("error"), dict) else {}
    code = err.get("code")
    why = f"WhatsApp error {code}: {str(err.get('message') or f'HTTP {status}')[:160]}"
    if code in RETRY_CODES:
        return Result(False, retry_in=RETRY_CODES[code], why=why)
    if status >= 500 or status == 429:
        return Result(False, retry_in=0.0, why=why)
    return Result(False, why=why)
