"""Query bodies for the review queue and the decision log: small pure functions, one per clause.

The queue is faceted: the query holds only the tenant, the chosen filters go in ``post_filter``,
and each count (status, language, confidence band, age) is taken with every filter but its own,
so a filter's counts say what choosing another value would show. Pagination is ``search_after``
over a total order (the sort field, then ``post_id``); the cursor is that sort tuple, opaque.
"""
from __future__ import annotations

import base64
import binascii
import json
from enum import Enum
from typing import Any

from plugin.errors import InvalidRequest
from plugin.review.model import ReviewStatus

#: the most items one queue page holds
MAX_LIMIT = 200
#: confidence bands counted for the filter (the top candidate's calibrated confidence). An item
#: without one (no candidates, or a configuration without a confidence model) is in no band
CONFIDENCE_BANDS = ({"key": "low", "to": 0.5}, {"key": "medium", "from": 0.5, "to": 0.8},
                    {"key": "high", "from": 0.8})
#: age bands counted for the filter (by when the item was made)
AGE_BANDS = ({"key": "day", "from": "now-1d"}, {"key": "week", "from": "now-7d", "to": "now-1d"},
             {"key": "older", "to": "now-7d"})


class Sort(str, Enum):
    NEWEST = "newest"
    OLDEST = "oldest"
    CONFIDENCE = "confidence"
    #: newest decided first (the history); undecided items after every decided one
    DECIDED = "decided"

    @classmethod
    def parse(cls, value: str) -> Sort:
        try:
            return cls(value)
        except ValueError:
            valid = ", ".join(m.value for m in cls)
            raise InvalidRequest(f"sort: {value[:40]!r} is not one of {valid}", errors=[
                {"field": "sort", "message": f"must be one of {valid}", "type": "enum"}]) from None


#: each sort as OpenSearch sort clauses; ``post_id`` last makes the order total (search_after).
#: Items without a confidence come after every scored one (``missing: _last``; their sort value
#: is the string ``"-Infinity"``, which a cursor carries back to OpenSearch as is)
SORTS: dict[Sort, list[dict[str, Any]]] = {
    Sort.NEWEST: [{"created_at": {"order": "desc"}}, {"post_id": {"order": "asc"}}],
    Sort.OLDEST: [{"created_at": {"order": "asc"}}, {"post_id": {"order": "asc"}}],
    Sort.CONFIDENCE: [{"confidence": {"order": "desc", "missing": "_last"}},
                      {"created_at": {"order": "desc"}}, {"post_id": {"order": "asc"}}],
    Sort.DECIDED: [{"decided_at": {"order": "desc", "missing": "_last"}}, {"post_id": {"order": "asc"}}],
}


# -- clauses ------------------------------------------------------------------------------------
def tenant_filter(tenant: str) -> dict[str, Any]:
    return {"term": {"tenant": tenant}}


def status_filter(status: ReviewStatus | None) -> dict[str, Any] | None:
    return {"term": {"status": status.value}} if status is not None else None


def lang_filter(lang: str | None) -> dict[str, Any] | None:
    return {"term": {"lang": lang}} if lang else None


def confidence_filter(low: float | None, high: float | None) -> dict[str, Any] | None:
    """The top candidate's confidence within ``[low, high]`` (either end open when ``None``).

    Any bound leaves out items without a confidence: a "low" band means a weak candidate was
    found, not that none was (those are found by status and sorted last by confidence)."""
    if low is None and high is None:
        return None
    bounds = {k: v for k, v in (("gte", low), ("lte", high)) if v is not None}
    return {"range": {"confidence": bounds}}


def since_filter(since: str | None) -> dict[str, Any] | None:
    """Items made at or after ``since`` (an ISO date or date-time)."""
    return {"range": {"created_at": {"gte": since}}} if since else None


def bool_filter(clauses: list[dict[str, Any] | None]) -> dict[str, Any]:
    kept = [c for c in clauses if c is not None]
    return {"bool": {"filter": kept}} if kept else {"match_all": {}}


# -- cursor ---------------------------------------------------------------------------------------
def encode_cursor(sort_values: list[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(sort_values).encode()).decode().rstrip("=")


def decode_cursor(cursor: str, sort: Sort = Sort.NEWEST) -> list[Any]:
    """The sort tuple a cursor of ``sort`` carries; anything else is a 422, never a request to
    OpenSearch: it must be as long as ``SORTS[sort]`` and each value of its field's type
    (``_CURSOR_TYPES``). A list of the right shape but wrong types (``[null, null]``) reached
    OpenSearch, which answered 500 with a Java exception, and the API called that an outage."""
    try:
        values = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError, RecursionError):
        values = None
    fields = [next(iter(clause)) for clause in SORTS[sort]]
    if not isinstance(values, list) or len(values) != len(fields) or \
            not all(_CURSOR_TYPES[f](v) for f, v in zip(fields, values)):
        raise InvalidRequest("cursor: not a cursor this API gave for this sort", errors=[
            {"field": "cursor", "message": "not a cursor this API gave for this sort", "type": "cursor"}])
    return values


def _epoch_ms(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and -2**63 <= v < 2**63


def _score(v: Any) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool) and v == v) or \
        v in ("-Infinity", "Infinity")


def _text(v: Any) -> bool:
    return isinstance(v, str) and 0 < len(v) <= 512


#: what each sort field's value in a cursor may be: dates are epoch milliseconds (a missing
#: ``decided_at`` sorts as Long.MIN_VALUE), confidence a number or OpenSearch's ``"-Infinity"``
_CURSOR_TYPES = {"created_at": _epoch_ms, "decided_at": _epoch_ms, "confidence": _score,
                 "post_id": _text}


# -- bodies ---------------------------------------------------------------------------------------
def queue_body(tenant: str, *, status: ReviewStatus | None = ReviewStatus.PENDING,
               lang: str | None = None, min_confidence: float | None = None,
               max_confidence: float | None = None, since: str | None = None,
               sort: Sort = Sort.NEWEST, after: list[Any] | None = None,
               limit: int = 50) -> dict[str, Any]:
    """One queue page with the faceted counts (``aggregations``: status, lang, confidence, age)."""
    facets = {"status": status_filter(status), "lang": lang_filter(lang),
              "confidence": confidence_filter(min_confidence, max_confidence),
              "age": since_filter(since)}

    def others(name: str) -> dict[str, Any]:
        return bool_filter([c for k, c in facets.items() if k != name])

    body: dict[str, Any] = {
        "size": limit, "track_total_hits": False, "seq_no_primary_term": True,
        "query": {"bool": {"filter": [tenant_filter(tenant)]}},
        "post_filter": bool_filter(list(facets.values())),
        "sort": SORTS[sort],
        "_source": {"excludes": ["last_decision.candidates"]},
        "aggs": {
            "status": {"filter": others("status"),
                       "aggs": {"v": {"terms": {"field": "status", "size": len(ReviewStatus)}}}},
            "lang": {"filter": others("lang"),
                     "aggs": {"v": {"terms": {"field": "lang", "size": 100}}}},
            "confidence": {"filter": others("confidence"), "aggs": {"v": {"range": {
                "field": "confidence", "keyed": True, "ranges": list(CONFIDENCE_BANDS)}}}},
            "age": {"filter": others("age"), "aggs": {"v": {"date_range": {
                "field": "created_at", "keyed": True, "ranges": list(AGE_BANDS)}}}},
        },
    }
    if after is not None:
        body["search_after"] = after
    return body


def counts_of(aggregations: dict[str, Any]) -> dict[str, dict[str, int]]:
    """``{"status": {...}, "lang": {...}, "confidence": {...}, "age": {...}}`` from a queue body's
    aggregations; every status is listed, 0 when none."""
    def terms(name: str) -> dict[str, int]:
        return {b["key"]: b["doc_count"] for b in aggregations[name]["v"]["buckets"]}

    def bands(name: str) -> dict[str, int]:
        return {k: b["doc_count"] for k, b in aggregations[name]["v"]["buckets"].items()}

    return {"status": {s.value: terms("status").get(s.value, 0) for s in ReviewStatus},
            "lang": terms("lang"), "confidence": bands("confidence"), "age": bands("age")}


def decisions_body(tenant: str, post_id: str, limit: int = 1000) -> dict[str, Any]:
    """A post's decisions, oldest first."""
    return {"size": limit, "query": {"bool": {"filter": [tenant_filter(tenant),
                                                         {"term": {"post_id": post_id}}]}},
            "sort": [{"at": {"order": "asc"}}, {"id": {"order": "asc"}}]}


#: the decision log's total order, which the export pages through (``search_after``)
EXPORT_SORT = [{"at": {"order": "asc"}}, {"id": {"order": "asc"}}]


def export_query(tenant: str, since: str | None = None, *, undos: bool = False) -> dict[str, Any]:
    """The tenant's decisions made at or after ``since``, oldest first: the export's input (the
    review decisions only: a claim's split and merge events, which name no post, are not).
    ``undos``: only the undos, and of each only what it took back (the export's first pass; an
    undo is never older than what it undid, so ``since`` applies to them too)."""
    body: dict[str, Any] = {"query": bool_filter([
        tenant_filter(tenant), {"exists": {"field": "post_id"}}, {"range": {"at": {"gte": since}}} if since else None,
        {"term": {"action": "undo"}} if undos else None]), "sort": EXPORT_SORT}
    if undos:
        body["_source"] = ["supersedes"]
    return body
