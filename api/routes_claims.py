"""Claims: the key's tenant's posts grouped by the claim they make (``plugin.claims``)."""
from __future__ import annotations

from flask import Response, g, request

from plugin.claims.queries import MAX_LIMIT, PRIORITY, SORTS
from plugin.claims.records import Status
from plugin.errors import InvalidRequest
from plugin.params import parse_int
from plugin.service.keys import Scope

from api import schemas_claims as s
from api.routing import reply, route, services

_STR = {"type": "string"}
_LIMIT = {"name": "limit", "in": "query", "required": False,
          "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": 50}}
_LIST_QUERY = [
    {"name": "status", "in": "query", "required": False, "schema": {"enum": [*Status.ALL, "any"], "default": "any"}},
    {"name": "lang", "in": "query", "required": False, "schema": _STR,
     "description": "claims with at least one post in this language (ISO 639-1)"},
    {"name": "since", "in": "query", "required": False, "schema": {**_STR, "format": "date-time"},
     "description": "claims with a post at or after this ISO date or date-time"},
    {"name": "min_posts", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1}},
    {"name": "sort", "in": "query", "required": False, "schema": {"enum": [PRIORITY, *SORTS], "default": "newest"},
     "description": "`priority`: the open and answered claims of the last 7 days by spread, growth, check-worthiness and "
                    "whether a fact-check answers them (docs: Claims, the queue's order); `newest`: latest post "
                    "first; `posts`: most posts first; `first_seen`: newest claims first"},
    {"name": "cursor", "in": "query", "required": False, "schema": _STR, "description": "the `next` of the previous page"},
    _LIMIT,
]
_DETAIL_QUERY = [
    {"name": "posts_cursor", "in": "query", "required": False, "schema": _STR,
     "description": "the `posts_next` of the previous answer"},
    {**_LIMIT, "name": "posts_limit"},
]


def _choice(name: str, allowed: list[str] | tuple[str, ...], default: str) -> str:
    value = request.args.get(name, default)
    if value not in allowed:
        message = f"{name} must be one of {', '.join(allowed)}"
        raise InvalidRequest(message, errors=[{"field": name, "message": message, "type": "enum"}])
    return value


@route("GET", "/v1/claims", summary="The claims the tenant's posts make", tag="claims", response=s.ClaimPage,
       query=_LIST_QUERY,
       description="Every post a worker matched joins a claim (docs: Claims). Filters combine; pages "
                   "follow `next`.")
def list_claims() -> Response:
    args = request.args
    status = _choice("status", [*Status.ALL, "any"], "any")
    min_posts = args.get("min_posts")
    found = services().claims.page(
        g.api_key.tenant, status=None if status == "any" else status, lang=args.get("lang") or None,
        since=args.get("since") or None,
        min_posts=parse_int("min_posts", min_posts, lo=1, hi=10**9) if min_posts else None,
        sort=_choice("sort", [PRIORITY, *SORTS], "newest"), cursor=args.get("cursor") or None,
        limit=parse_int("limit", args.get("limit", "50"), lo=1, hi=MAX_LIMIT))
    return reply(s.ClaimPage.model_validate(found))


@route("GET", "/v1/claims/<path:claim_id>", summary="One claim with a page of its posts", tag="claims",
       response=s.ClaimDetail, query=_DETAIL_QUERY, errors=(404,),
       description="Another tenant's claim is a 404, as an unknown one is.")
def get_claim(claim_id: str) -> Response:
    tenant = g.api_key.tenant
    claims = services().claims
    claim = claims.get(tenant, claim_id)
    posts = claims.posts(tenant, claim_id, cursor=request.args.get("posts_cursor") or None,
                         limit=parse_int("posts_limit", request.args.get("posts_limit", "50"), lo=1, hi=MAX_LIMIT))
    events = [e.to_dict() for e in claims.events(tenant, claim_id)]
    return reply(s.detail(claim.to_dict(), posts, events))


@route("POST", "/v1/claims/<path:claim_id>/split", summary="Take a post out of a claim: not the same claim",
       tag="claims", scope=Scope.WRITE, body=s.SplitIn, response=s.SplitOut, errors=(404, 409),
       description="The post gets a claim of its own and is kept out of this one, and so are later posts "
                   "linked to it (a cannot-link). An event with the key's name as actor goes to the decision "
                   "log. A post not in the claim, or a claim's only post, is a 409; another tenant's claim "
                   "a 404.")
def split_claim(claim_id: str, body: s.SplitIn) -> Response:
    done = services().claims.split(g.api_key.tenant, claim_id, body.post_id, actor=g.api_key.name,
                                   note=body.note)
    return reply(s.SplitOut.model_validate({"claim": done["claim"].to_dict(), "new_claim": done["new_claim"].to_dict(),
                                            "event": done["event"].to_dict()}))


@route("POST", "/v1/claims/<path:claim_id>/decision", summary="Decide a claim once for all its posts",
       tag="claims", scope=Scope.WRITE, body=s.ClaimDecisionIn, response=s.ClaimDecisionOut, errors=(404, 409, 413),
       description="The decision goes to every post of the claim with a pending review item (a confirm "
                   "becomes `manual` where the fact-check was not among a post's candidates), each with its "
                   "webhook (`match.confirmed`, `match.rejected`) as a desk decision has; posts already "
                   "decided keep their decision (`skipped`). The claim is then answered (or not a claim), "
                   "and later posts that join it get its fact-check first (`reason: confirmed-for-claim`). "
                   "A claim of over 2000 posts is a 413.")
def decide_claim(claim_id: str, body: s.ClaimDecisionIn) -> Response:
    from plugin.service.claiming import decide_claim as decide

    sv = services()
    done = decide(sv.claims, sv.review, sv.posts, g.api_key.tenant, g.api_key.name, claim_id, body.action,
                  body.factcheck_id, body.note, origin="api", bulk=sv.settings.review_bulk_max)
    return reply(s.ClaimDecisionOut.model_validate(done))


@route("POST", "/v1/claims/merge", summary="Merge claims that are one claim", tag="claims", scope=Scope.WRITE,
       body=s.MergeIn, response=s.MergeOut, errors=(404, 409),
       description="The claims become one (`into`, or the one with the most posts): it counts their posts, "
                   "later posts linked to any of them join it (a must-link), and an event with the key's "
                   "name as actor goes to the decision log. Any claim unknown or another tenant's is a 404 "
                   "and nothing is merged; a claim already merged is a 409.")
def merge_claims(body: s.MergeIn) -> Response:
    done = services().claims.merge(g.api_key.tenant, body.claims, actor=g.api_key.name, into=body.into,
                                   note=body.note)
    return reply(s.MergeOut.model_validate({"claim": done["claim"].to_dict(), "merged": done["merged"],
                                            "event": done["event"].to_dict()}))
