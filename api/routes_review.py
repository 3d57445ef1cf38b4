"""The review queue: read keys see their tenant's queue and items, write keys decide
(``plugin.review.desk.ReviewDesk`` does the work; the actor of a decision is the key's name)."""
from __future__ import annotations

from flask import Response, g, request

from plugin.params import parse_float, parse_int
from plugin.review.queries import MAX_LIMIT
from plugin.service.keys import Scope

from api import schemas as s
from api.routing import read_json_value, reply, route, services

_STR = {"type": "string"}
_QUEUE_QUERY = [
    {"name": "status", "in": "query", "required": False,
     "schema": {"enum": ["pending", "confirmed", "rejected", "no_match", "not_a_claim", "any"],
                "default": "pending"}},
    {"name": "lang", "in": "query", "required": False, "schema": _STR,
     "description": "the post's language (ISO 639-1)"},
    {"name": "min_confidence", "in": "query", "required": False,
     "schema": {"type": "number", "minimum": 0, "maximum": 1},
     "description": "the top candidate's calibrated confidence, at least"},
    {"name": "max_confidence", "in": "query", "required": False,
     "schema": {"type": "number", "minimum": 0, "maximum": 1}},
    {"name": "since", "in": "query", "required": False, "schema": {**_STR, "format": "date-time"},
     "description": "items made at or after this ISO date or date-time"},
    {"name": "sort", "in": "query", "required": False,
     "schema": {"enum": ["newest", "oldest", "confidence", "decided"], "default": "newest"},
     "description": "`decided`: newest decided first, for a history"},
    {"name": "cursor", "in": "query", "required": False, "schema": _STR,
     "description": "the `next` of the previous page"},
    {"name": "limit", "in": "query", "required": False,
     "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": 50}},
]
_DECISIONS_BODY = {"required": True, "content": {"application/json": {"schema": {"oneOf": [
    {"$model": s.DecisionIn},
    {"type": "array", "items": {"$model": s.DecisionIn}, "minItems": 1,
     "description": "at most FACTSIEVE_REVIEW_BULK_MAX (200) decisions"}]}}}}


def _number(name: str) -> float | None:
    raw = request.args.get(name)
    return None if raw is None else parse_float(name, raw, lo=0.0, hi=1.0)


@route("GET", "/v1/review", summary="The review queue: matched posts waiting for a decision",
       tag="review", response=s.ReviewQueue, query=_QUEUE_QUERY,
       description="The key's tenant's items, one per matched post, with their candidates and "
                   "why each matched. Filters combine; `counts` gives, for each filter, the items "
                   "its values would show with the other filters applied. Pages follow `next`.")
def review_queue() -> Response:
    args = request.args
    status = args.get("status", "pending")
    found = services().review.queue(
        g.api_key.tenant, status=None if status == "any" else status, lang=args.get("lang") or None,
        min_confidence=_number("min_confidence"), max_confidence=_number("max_confidence"),
        since=args.get("since") or None, sort=args.get("sort", "newest"),
        cursor=args.get("cursor") or None,
        limit=parse_int("limit", args.get("limit", "50"), lo=1, hi=MAX_LIMIT))
    return reply(s.ReviewQueue.model_validate(found.to_dict()))


@route("GET", "/v1/review/<path:post_id>", summary="One review item with its decisions",
       tag="review", response=s.ReviewItem, errors=(404,),
       description="Another tenant's item is a 404, as an unknown one is.")
def review_item(post_id: str) -> Response:
    return reply(s.ReviewItem.model_validate(services().review.item(g.api_key.tenant, post_id).to_dict()))


@route("POST", "/v1/review/decisions", summary="Decide review items: one decision or a list",
       tag="review", scope=Scope.WRITE, raw_body=_DECISIONS_BODY, status=201,
       response=s.DecisionsOut, errors=(404, 409), also={207: s.DecisionsOut},
       description="Everything is checked before anything is written: a bad decision anywhere in "
                   "the list (422), an unknown post or fact-check (404), an item another reviewer "
                   "decided first or that changed since `version` (409, its body carries that "
                   "`decision`), a list over the limit (413) record nothing. The items are then "
                   "written one by one over the versions read (the store has no transaction): "
                   "when another request moves some of them in between, the rest are still "
                   "recorded and the answer is **207** with `partial: true`, `decisions` (what "
                   "was recorded) and `not_recorded` (each item that was not, why, and the "
                   "decision that won); when it moves all of them, a 409 that records nothing. "
                   "So 201 means all recorded, 207 some (listed), 409 none. The actor is the API "
                   "key's name. `match.confirmed`, `match.rejected` and `match.undone` webhooks "
                   "follow for what was recorded.")
def review_decide() -> Response:
    body = read_json_value()
    decisions = body if isinstance(body, list) else [body]
    done = services().review.decide_batch(g.api_key.tenant, g.api_key.name, decisions, origin="api")
    return reply(s.DecisionsOut(decisions=[s.Decision.model_validate(d.to_dict()) for d in done.recorded],
                                partial=done.partial,
                                not_recorded=[s.NotRecorded.model_validate(n.to_dict()) for n in done.not_recorded]),
                 207 if done.partial else 201)
