"""The tipline's calls to Telegram and WhatsApp: a planned message sent (one attempt, judged:
sent, retry, or failed for good), and a photo's bytes fetched. Through the guarded outbound client
webhooks use (``plugin.net``: checked addresses, one deadline, a capped body); the API base URLs
are settings (``FACTSIEVE_TELEGRAM_API_URL``, ``FACTSIEVE_WHATSAPP_API_URL``), trusted as the
operator's, so tests and staging point them at fakes. A bot token travels in Telegram's URL path
and a WhatsApp token in a header: neither is ever in a message, log line or error FactSieve
writes (errors name the call, never the URL)."""
from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import quote, urlsplit

from plugin.channels import telegram, whatsapp
from plugin.channels.records import Button, Channel, Kind, Outgoing
from plugin.channels.store import ChannelStore
from plugin.channels.wire import Result
from plugin.errors import BadInput
from plugin.net.outbound import Purpose, backends_of, backoff_delay, check_target, origin_of, resolve_host
from plugin.net.transport import DeliveryError, Reply, request
from plugin.settings import Settings

CHANNEL = Purpose("channel API", "channel API URL", "FACTSIEVE_TELEGRAM_API_URL / _WHATSAPP_API_URL",
                  "the operator's", "to call it", "channel calls are not sent there", "")


def _base(settings: Settings, kind: Kind) -> str:
    return (settings.telegram_api_url if kind is Kind.TELEGRAM else settings.whatsapp_api_url).rstrip("/")


def call(settings: Settings, channel: Channel, method: str, url: str, body: dict[str, Any] | None = None, *,
         max_body: int = 64 * 1024, what: str) -> Reply:
    """One call to the channel's API (``url`` under its base, or a media URL it gave), within
    ``webhook_timeout_s``. ``DeliveryError`` names ``what``, never the URL."""
    allowed = [str(origin_of(_base(settings, channel.kind) + "/", CHANNEL))]
    try:
        target = check_target(url, allowed, lambda h: resolve_host(h, CHANNEL), backends_of(settings.backend_urls),
                              CHANNEL)
    except BadInput:
        raise DeliveryError(f"refused: {what}: the address is not the channel API's") from None
    headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "FactSieve tipline"}
    if channel.kind is Kind.WHATSAPP:
        headers["Authorization"] = f"Bearer {channel.secrets.get('access_token', '')}"
    data = json.dumps(body).encode() if body is not None else None
    try:
        return request(method, target, data, headers, deadline_s=settings.webhook_timeout_s, max_body=max_body)
    except DeliveryError as exc:
        raise DeliveryError(f"{exc.detail.split(':', 1)[0]}: {what}") from None


def send(settings: Settings, channel: Channel, chat: str, out: Outgoing) -> Result:
    """Send ``out`` to ``chat``: one attempt, judged."""
    base = _base(settings, channel.kind)
    try:
        if channel.kind is Kind.TELEGRAM:
            method, body = telegram.send_call(chat, out)
            reply = call(settings, channel, "POST", f"{base}/bot{channel.secrets['bot_token']}/{method}", body,
                         what=f"telegram {method}")
            return telegram.judge(reply.status, reply.body)
        reply = call(settings, channel, "POST", f"{base}/{quote(channel.phone_number_id or '')}/messages",
                     whatsapp.send_body(chat, out), what="whatsapp messages")
        return whatsapp.judge(reply.status, reply.body)
    except DeliveryError as exc:
        return Result(False, retry_in=0.0, why=exc.detail)


def media(settings: Settings, channel: Channel, ref: str) -> bytes:
    """A photo's bytes (at most ``image_max_bytes``): Telegram's ``getFile`` then its file URL;
    WhatsApp's media URL lookup then the URL, with the token. ``BadInput`` when it cannot be had."""
    base = _base(settings, channel.kind)
    limit = settings.image_max_bytes
    try:
        if channel.kind is Kind.TELEGRAM:
            token = channel.secrets["bot_token"]
            got = call(settings, channel, "POST", f"{base}/bot{token}/getFile", {"file_id": ref}, what="telegram getFile")
            path = (json.loads(got.body or b"{}").get("result") or {}).get("file_path")
            if got.status != 200 or not path:
                raise BadInput("the photo could not be had from Telegram (getFile)")
            url = f"{base}/file/bot{token}/{quote(str(path))}"
        else:
            got = call(settings, channel, "GET", f"{base}/{quote(ref)}", what="whatsapp media lookup")
            url = str(json.loads(got.body or b"{}").get("url") or "")
            if got.status != 200 or urlsplit(url).scheme not in ("http", "https"):
                raise BadInput("the photo could not be had from WhatsApp (media lookup)")
        reply = call(settings, channel, "GET", url, max_body=limit + 1, what=f"{channel.kind.value} media download")
    except (DeliveryError, ValueError) as exc:
        raise BadInput(f"the photo could not be fetched from {channel.kind.value}: "
                       f"{getattr(exc, 'detail', 'not JSON')}") from None
    if reply.status != 200 or not reply.complete or len(reply.body) > limit:
        raise BadInput(f"the photo from {channel.kind.value} is missing or over {limit} bytes")
    return reply.body


def attempt(settings: Settings, store: ChannelStore, mid: str) -> float | None:
    """One attempt of a planned message: ``None`` when done (sent, failed for good, or nothing
    left to send), else seconds until the next. The raw chat id leaves the item once sent."""
    item = store.item(mid)
    if item is None or item["status"] != "pending":
        return None
    channel = store.find(item["channel"])
    if channel is None:  # removed meanwhile
        item.update(status="failed", error="channel removed", chat=None)
        store.save(item)
        return None
    if store.stopped_since(channel, item["user"], float(item.get("planned_at", "inf"))):  # /stop came first
        item.update(status="failed", error="the user stopped", chat=None)
        store.save(item)
        return None
    out = Outgoing(item["text"], tuple(Button(i, t) for i, t in item["buttons"]), item.get("template"))
    result = send(settings, channel, item["chat"], out)
    item["attempts"] += 1
    item["last_at"] = time.time()
    if result.ok:
        item.update(status="sent", chat=None, error=None)
    elif result.retry_in is not None and item["attempts"] < settings.webhook_max_attempts:
        item["error"] = result.why
        store.save(item)
        return max(result.retry_in, backoff_delay(item["attempts"], settings.webhook_backoff_s,
                                                   settings.webhook_backoff_max_s))
    else:
        item.update(status="failed", chat=None, error=result.why)
        if result.blocked:  # the user blocked the bot: as good as /stop
            store.stop(channel, item["user"])
    store.save(item)
    return None
