"""Query bodies of the claims: the join's reads of the posts index and the claim listing (pure).

Every body is filtered by the tenant. Listing pages follow ``search_after`` over a total order
(the sort field, then ``claim_id``); the cursor is that sort tuple, opaque (as the review queue's).
"""
from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from typing import Any

from plugin.errors import InvalidRequest

#: the post fields the join reads of an earlier post
EARLIER_FIELDS = ("post_id", "text", "claim_id", "answer", "answer_confidence", "image_hash", "kept_out")
#: every stored field of a post but its vector (the posts index keeps the vector out of
#: ``_source``, so a split rewrites the post whole, embedding it again)
SPLIT_FIELDS = ("tenant", "post_id", "text", "lang", "date", "created_at", "claim_id", "answer", "answer_confidence",
                "image_hash", "kept_out", "check_worthiness")
#: the post fields a claim's post list shows
POST_FIELDS = ("post_id", "text", "lang", "created_at", "answer", "answer_confidence")
#: the most claims (or posts of a claim) one page holds
MAX_LIMIT = 200
#: the sorts of the claim listing: by priority (``plugin.claims.priority``, ranked over a bounded
#: window of recent open claims), newest activity, most posts, first seen
PRIORITY = "priority"
SORTS: dict[str, list[dict[str, Any]]] = {
    "newest": [{"last_seen": {"order": "desc"}}, {"claim_id": {"order": "asc"}}],
    "posts": [{"post_count": {"order": "desc"}}, {"claim_id": {"order": "asc"}}],
    "first_seen": [{"first_seen": {"order": "desc"}}, {"claim_id": {"order": "asc"}}],
}


def tenant_filter(tenant: str) -> dict[str, Any]:
    return {"term": {"tenant": tenant}}


def earlier_body(tenant: str, vector: Sequence[float], k: int, *, answer: str | None = None) -> dict[str, Any]:
    """The tenant's ``k`` posts nearest ``vector`` that joined a claim; with ``answer``, only
    those whose best match was that fact-check (the tenant and answer filters inside the graph
    search, so other posts never take a place among the ``k``)."""
    clauses: list[dict[str, Any]] = [tenant_filter(tenant), {"exists": {"field": "claim_id"}}]
    if answer is not None:
        clauses.append({"term": {"answer": answer}})
    return {"size": k, "_source": list(EARLIER_FIELDS),
            "query": {"knn": {"embedding": {"vector": [float(x) for x in vector], "k": k,
                                            "filter": {"bool": {"filter": clauses}}}}}}


def answered_body(tenant: str) -> dict[str, Any]:
    """Whether the tenant has a claim the desk answered (a count that stops at the first)."""
    return {"size": 0, "terminate_after": 1, "track_total_hits": True,
            "query": {"bool": {"filter": [tenant_filter(tenant), {"term": {"fact_check.confirmed": True}}]}}}


def recent_open_body(tenant: str, since: str, limit: int, lang: str | None, min_posts: int | None) -> dict[str, Any]:
    """The tenant's open and answered claims seen at or after ``since``, newest first: what
    priority ranks (an answered one last: nobody needs to look)."""
    clauses: list[dict[str, Any]] = [tenant_filter(tenant), {"terms": {"status": ["open", "answered"]}},
                                     {"range": {"last_seen": {"gte": since}}}]
    if lang:
        clauses.append({"term": {"lang_list": lang}})
    if min_posts:
        clauses.append({"range": {"post_count": {"gte": min_posts}}})
    return {"size": limit, "query": {"bool": {"filter": clauses}}, "sort": SORTS["newest"],
            "track_total_hits": True, "_source": {"excludes": ["recent_posts", "removed_posts"]}}


def list_body(tenant: str, *, status: str | None, lang: str | None, since: str | None,
              min_posts: int | None, sort: str, after: list[Any] | None, limit: int) -> dict[str, Any]:
    """One page of the tenant's claims (``after``: the previous page's last sort tuple)."""
    clauses: list[dict[str, Any]] = [tenant_filter(tenant)]
    if status:
        clauses.append({"term": {"status": status}})
    if lang:
        clauses.append({"term": {"lang_list": lang}})
    if since:
        clauses.append({"range": {"last_seen": {"gte": since}}})
    if min_posts:
        clauses.append({"range": {"post_count": {"gte": min_posts}}})
    body: dict[str, Any] = {"size": limit, "query": {"bool": {"filter": clauses}}, "sort": SORTS[sort],
                            "track_total_hits": True, "_source": {"excludes": ["recent_posts"]}}
    if after:
        body["search_after"] = after
    return body


def claim_posts_body(tenant: str, claim_ids: Sequence[str], *, after: list[Any] | None, limit: int) -> dict[str, Any]:
    """One page of a claim's posts (those whose ``claim_id`` is the claim or one merged into
    it), oldest first."""
    body: dict[str, Any] = {"size": limit, "_source": list(POST_FIELDS), "track_total_hits": True,
                            "query": {"bool": {"filter": [tenant_filter(tenant), {"terms": {"claim_id": list(claim_ids)}}]}},
                            "sort": [{"created_at": {"order": "asc"}}, {"post_id": {"order": "asc"}}]}
    if after:
        body["search_after"] = after
    return body


def lead_body(tenant: str, claim_ids: Sequence[str]) -> dict[str, Any]:
    """The post that leads a claim after its lead was split out: the most confident best match,
    then the earliest (``cluster.lead_of`` over the posts the index holds, by a sort)."""
    return {"size": 1, "_source": list(POST_FIELDS),
            "query": {"bool": {"filter": [tenant_filter(tenant), {"terms": {"claim_id": list(claim_ids)}}]}},
            "sort": [{"answer_confidence": {"order": "desc", "missing": "_last"}}, {"created_at": {"order": "asc"}},
                     {"post_id": {"order": "asc"}}]}


def posts_since_body(tenant: str, claim_ids: Sequence[str], since: str, but: Sequence[str]) -> dict[str, Any]:
    """How many of a claim's posts but those of ``but`` arrived at or after ``since`` (a count)."""
    return {"size": 0, "track_total_hits": True, "query": {"bool": {"filter": [
        tenant_filter(tenant), {"terms": {"claim_id": list(claim_ids)}}, {"range": {"created_at": {"gte": since}}}],
        "must_not": [{"terms": {"post_id": list(but)}}]}}}


def events_body(tenant: str, claim_id: str, limit: int = 200) -> dict[str, Any]:
    """A claim's split and merge events, oldest first (it acted, or was the other side)."""
    return {"size": limit, "query": {"bool": {
        "filter": [tenant_filter(tenant), {"terms": {"action": ["split", "merge"]}}],
        "should": [{"term": {"claim_id": claim_id}}, {"term": {"claims": claim_id}}], "minimum_should_match": 1}},
        "sort": [{"at": {"order": "asc"}}, {"id": {"order": "asc"}}]}


def encode_cursor(values: list[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(values).encode()).decode().rstrip("=")


def decode_cursor(cursor: str, width: int = 2) -> list[Any]:
    """The sort tuple a cursor carries (a number or date in epoch ms, then an id); anything else
    is a 422, never a request to OpenSearch."""
    try:
        values = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError, RecursionError):
        values = None
    if not (isinstance(values, list) and len(values) == width
            and isinstance(values[0], int) and not isinstance(values[0], bool) and -2**63 <= values[0] < 2**63
            and isinstance(values[1], str) and 0 < len(values[1]) <= 512):
        raise InvalidRequest("cursor: not a cursor this API gave", errors=[
            {"field": "cursor", "message": "not a cursor this API gave", "type": "cursor"}])
    return values
