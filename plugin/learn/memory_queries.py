"""Query bodies of the memory step (``plugin.learn.memory``): small pure functions, one per read.

Every body is filtered by the tenant: a tenant's memory is built only of its own posts and its
own desk's decisions.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from plugin.index.bodies import cosine_of  # noqa: F401 - the memory's reads convert scores with it

#: the decision fields the memory reads (``plugin.review.model.decision_record``): what it uses,
#: and ``tenant`` and ``actor``, which every ``plugin.review.records.Decision`` carries
DECISION_FIELDS = ("id", "tenant", "post_id", "factcheck_id", "action", "actor", "origin", "at",
                   "supersedes", "candidates")
#: the post fields a neighbour carries back
POST_FIELDS = ("post_id", "text", "lang", "created_at")
#: the most decisions one read returns: a post is decided a handful of times at most
MAX_DECISIONS = 1000


def tenant_filter(tenant: str) -> dict[str, Any]:
    return {"term": {"tenant": tenant}}


def neighbours_body(tenant: str, vector: Sequence[float], k: int) -> dict[str, Any]:
    """The tenant's ``k`` earlier posts nearest ``vector`` (Lucene HNSW with the tenant filter
    inside the graph search, so another tenant's posts never take a place among the ``k``)."""
    return {"size": k, "_source": list(POST_FIELDS),
            "query": {"knn": {"embedding": {"vector": [float(x) for x in vector], "k": k,
                                            "filter": tenant_filter(tenant)}}}}


def any_decision_body(tenant: str) -> dict[str, Any]:
    """Whether the tenant's desk has decided anything (a count that stops at the first)."""
    return {"size": 0, "terminate_after": 1, "track_total_hits": True,
            "query": {"bool": {"filter": [tenant_filter(tenant)]}}}


def decisions_body(tenant: str, post_ids: Sequence[str]) -> dict[str, Any]:
    """The tenant's decisions on ``post_ids``, oldest first (undos included: the memory drops
    what they take back)."""
    return {"size": MAX_DECISIONS, "_source": list(DECISION_FIELDS),
            "query": {"bool": {"filter": [tenant_filter(tenant),
                                          {"terms": {"post_id": sorted(set(post_ids))}}]}},
            "sort": [{"at": {"order": "asc"}}, {"id": {"order": "asc"}}]}

