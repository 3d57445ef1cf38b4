"""Webhook routes: subscriptions, their signing secrets and their delivery logs, each visible
to its own tenant (an admin key sees all)."""
from __future__ import annotations

import re

from flask import Response, g, request

from plugin.errors import BadInput, InvalidRequest, NotFound
from plugin.params import parse_int
from plugin.service.keys import Scope
from plugin.service.signing import MAX_SECRET_OVERLAP_S, SECRET_OVERLAP_S

from api import schemas as s
from api.routing import no_content, reply, route, services


# -- webhooks -------------------------------------------------------------------------------------
@route("POST", "/v1/webhooks", summary="Subscribe a URL to events", tag="webhooks",
       scope=Scope.WRITE, body=s.WebhookIn, status=201, response=s.WebhookCreated,
       description="Deliveries are signed: X-FactSieve-Signature: sha256=HMAC-SHA256(secret, "
                   "'<X-FactSieve-Timestamp>.<raw body>'). The secret is returned only here.")
def create_webhook(body: s.WebhookIn) -> Response:
    try:
        sub = services().webhooks.create(body.url, body.events, body.languages, body.min_score,
                                         body.secret, owner=g.api_key.tenant)
    except BadInput as exc:
        if isinstance(exc, InvalidRequest):
            raise
        raise InvalidRequest(exc.detail, errors=[{"field": "url", "message": exc.detail,
                                                  "type": "url_refused"}]) from None
    return reply(s.WebhookCreated.model_validate(sub), 201, {"Location": f"/v1/webhooks/{sub['id']}"})


@route("GET", "/v1/webhooks", summary="All webhook subscriptions", tag="webhooks",
       response=s.WebhookList)
def list_webhooks() -> Response:
    return reply(s.WebhookList(webhooks=[s.WebhookOut.model_validate(w)
                                         for w in services().webhooks.list(g.api_key.sees)]))


#: What ``WebhookStore.create`` makes: an id in a URL is checked before it names a Redis key.
WEBHOOK_ID = re.compile(r"whk_[0-9a-f]{16}")


def owned_webhook(webhook_id: str) -> str:
    """``webhook_id`` once it has our shape and belongs to the calling key's tenant (admin: any);
    otherwise a 404, the same as for an id that does not exist."""
    if not WEBHOOK_ID.fullmatch(webhook_id):
        raise NotFound(f"no webhook subscription with id {webhook_id[:80]!r}")
    services().webhooks.get(webhook_id, g.api_key.sees)
    return webhook_id


@route("POST", "/v1/webhooks/<webhook_id>/secret", summary="Rotate a subscription's signing secret",
       tag="webhooks", scope=Scope.WRITE, response=s.WebhookCreated,
       query=[{"name": "overlap_s", "in": "query", "required": False,
               "description": "Seconds the replaced secret still signs deliveries; 0 revokes it "
                              "at once (a leaked secret)",
               "schema": {"type": "integer", "minimum": 0, "maximum": MAX_SECRET_OVERLAP_S,
                          "default": SECRET_OVERLAP_S}}],
       description="A new secret, returned only here. For `overlap_s` seconds (default 24 "
                   "hours) deliveries carry a signature with each secret (X-FactSieve-Signature: "
                   "sha256=<new>,sha256=<old>), so the receiver can switch over; a signature "
                   "matching either is valid. `overlap_s=0` signs with the new secret alone "
                   "from now on.")
def rotate_webhook_secret(webhook_id: str) -> Response:
    overlap_s = parse_int("overlap_s", request.args.get("overlap_s", str(SECRET_OVERLAP_S)),
                          lo=0, hi=MAX_SECRET_OVERLAP_S)
    sub = services().webhooks.rotate_secret(owned_webhook(webhook_id), overlap_s=overlap_s)
    return reply(s.WebhookCreated.model_validate(sub))


@route("GET", "/v1/webhooks/<webhook_id>", summary="One webhook subscription", tag="webhooks",
       response=s.WebhookOut)
def get_webhook(webhook_id: str) -> Response:
    return reply(s.WebhookOut.model_validate(services().webhooks.get(owned_webhook(webhook_id))))


@route("DELETE", "/v1/webhooks/<webhook_id>", summary="Delete a webhook subscription",
       tag="webhooks", scope=Scope.WRITE, status=204)
def delete_webhook(webhook_id: str) -> Response:
    services().webhooks.delete(owned_webhook(webhook_id))
    return no_content()


@route("GET", "/v1/webhooks/<webhook_id>/deliveries", summary="A subscription's delivery log",
       tag="webhooks", response=s.DeliveryList,
       query=[{"name": "limit", "in": "query", "required": False,
               "schema": {"type": "integer", "minimum": 1, "maximum": 500, "default": 50}}])
def list_deliveries(webhook_id: str) -> Response:
    limit = parse_int("limit", request.args.get("limit", "50"), lo=1, hi=500)
    log = services().webhooks.deliveries(owned_webhook(webhook_id), limit)
    return reply(s.DeliveryList(deliveries=[s.DeliveryOut.model_validate(d) for d in log]))
