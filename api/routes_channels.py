"""Tipline routes: the platforms' inbound webhooks (authenticated by the channel's secret token or
signature, not an API key) and the channels' management (admin keys).

A request that fails its channel's check is refused (401) and writes nothing; one that passes is
acknowledged at once (200) and its messages are handled by the workers (``plugin.service.tipline``)."""
from __future__ import annotations

import hmac

from flask import Response, current_app, g, request

from plugin.channels import telegram, whatsapp
from plugin.channels.records import Channel, Kind
from plugin.errors import NotFound, Unauthorized
from plugin.params import parse_int
from plugin.service.keys import Scope

from api import schemas_channels as s
from api.bodies import parse_json, read_body
from api.routing import enqueue, no_content, reply, route, services

_RAW = {"required": True, "content": {"application/json": {"schema": {"type": "object"}}}}


def _channel(kind: Kind, channel_id: str) -> Channel:
    ch = services().channels.find(channel_id)
    if ch is None or ch.kind is not kind:
        raise NotFound(f"no {kind.value} channel with id {channel_id[:80]!r}")
    return ch


def _raw() -> bytes:
    """The update's raw body (its signature covers exactly these bytes), within the JSON limit."""
    return read_body(services().settings.max_json_bytes, "FACTSIEVE_MAX_JSON_BYTES")


def _take(channel: Channel, updates: list, call: dict[str, str] | None = None) -> Response:
    from plugin.service.tipline import received
    from workers.names import channel_sender

    sender = channel_sender(current_app.extensions["factsieve.celery"])
    out = received(services(), channel, updates, enqueue_job=enqueue, send=sender)
    return reply(s.UpdateTaken(**out, **(call or {})), exclude_none=True)


@route("POST", "/v1/channels/telegram/<channel_id>", summary="Telegram's webhook: a bot's updates",
       tag="channels", scope=None, raw_body=_RAW, response=s.UpdateTaken, errors=(401, 404),
       description="Telegram sends each Update here (setWebhook with this URL and the channel's "
                   "secret_token). X-Telegram-Bot-Api-Secret-Token must be the channel's: anything "
                   "else is a 401 and nothing is written. A retried update is taken once.")
def telegram_update(channel_id: str) -> Response:
    ch = _channel(Kind.TELEGRAM, channel_id)
    given = request.headers.get(telegram.SECRET_HEADER, "")
    if not hmac.compare_digest(given.encode(), ch.secrets.get("secret_token", "").encode()) or not given:
        raise Unauthorized("the update's secret token is not this channel's")
    update = parse_json(_raw())
    return _take(ch, telegram.parse_update(update), telegram.callback_answer(update))


@route("GET", "/v1/channels/whatsapp/<channel_id>", summary="WhatsApp's webhook verification",
       tag="channels", scope=None, errors=(401, 404),
       query=[{"name": n, "in": "query", "required": False, "schema": {"type": "string"}}
              for n in ("hub.mode", "hub.verify_token", "hub.challenge")],
       description="Meta's handshake: answers hub.challenge when hub.verify_token is the channel's.")
def whatsapp_verify(channel_id: str) -> Response:
    ch = _channel(Kind.WHATSAPP, channel_id)
    answer = whatsapp.challenge(dict(request.args), ch.secrets.get("verify_token", ""))
    if answer is None:
        raise Unauthorized("the verification's token is not this channel's")
    return Response(answer[:200], status=200, mimetype="text/plain")


@route("POST", "/v1/channels/whatsapp/<channel_id>", summary="WhatsApp's webhook: a number's messages",
       tag="channels", scope=None, raw_body=_RAW, response=s.UpdateTaken, errors=(401, 404),
       description="X-Hub-Signature-256 must be sha256=HMAC-SHA256(app secret, raw body): anything "
                   "else is a 401 and nothing is written. A message delivered twice is taken once.")
def whatsapp_update(channel_id: str) -> Response:
    ch = _channel(Kind.WHATSAPP, channel_id)
    raw = _raw()
    if not whatsapp.signature_ok(ch.secrets.get("app_secret", ""), raw, request.headers.get(whatsapp.SIGNATURE_HEADER)):
        raise Unauthorized("the notification's signature is not this channel's")
    return _take(ch, whatsapp.parse_notification(parse_json(raw), ch.phone_number_id))


# -- management (admin) -----------------------------------------------------------------------------
@route("POST", "/v1/channels", summary="Add a tipline channel (Telegram bot or WhatsApp number)",
       tag="channels", scope=Scope.ADMIN, body=s.ChannelIn, status=201, response=s.ChannelCreated,
       description="The bot token, access token and app secret are stored and never shown again; "
                   "the channel's webhook secret (Telegram) or verify token (WhatsApp) is made here "
                   "and shown only in this answer.")
def create_channel(body: s.ChannelIn) -> Response:
    fields = body.model_dump(exclude={"kind", "name", "tenant"}, exclude_none=True)
    ch, made = services().channels.create(body.kind, body.tenant, body.name, fields)
    return reply(s.ChannelCreated(**ch.public(), **made), 201, {"Location": f"/v1/channels/{ch.id}"})


@route("GET", "/v1/channels", summary="The tipline channels", tag="channels", scope=Scope.ADMIN,
       response=s.ChannelList)
def list_channels() -> Response:
    return reply(s.ChannelList(channels=[s.ChannelOut(**c.public()) for c in services().channels.list(g.api_key.sees)]))


@route("GET", "/v1/channels/<channel_id>", summary="A tipline channel and its requests' outcomes",
       tag="channels", scope=Scope.ADMIN, response=s.ChannelDetail, errors=(404,),
       query=[{"name": "limit", "in": "query", "required": False,
               "schema": {"type": "integer", "minimum": 1, "maximum": 1000}}])
def show_channel(channel_id: str) -> Response:
    store = services().channels
    ch = store.get(channel_id, g.api_key.sees)
    raw = request.args.get("limit")
    limit = 100 if raw is None else parse_int("limit", raw, lo=1, hi=1000)
    return reply(s.ChannelDetail(**ch.public(), events=store.events(ch, limit)))


@route("DELETE", "/v1/channels/<channel_id>", summary="Remove a tipline channel", tag="channels",
       scope=Scope.ADMIN, status=204, errors=(404,))
def delete_channel(channel_id: str) -> Response:
    services().channels.remove(channel_id, g.api_key.sees)
    return no_content()
