"""Matching as if some fact-checks were not indexed, and the near-duplicates that go with them.

The lab's lookup threshold and confidence calibration both need a post run against an index
without the fact-checks that answer it: ``ExcludingMatcher`` pushes an ``ids`` ``must_not`` into
every sub-query (``exclude_ids``), and ``duplicates_of`` widens the left-out set to the same claim
fact-checked again (``plugin.search.duplicates``, the matcher's own test).
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from plugin.search.duplicates import DUPLICATE_JACCARD, claim_words, duplicates_of
from plugin.search.matcher import Matcher, MatchRequest
from plugin.search.retrieval import RetrievalConfig

def exclude_ids(body: dict[str, Any], ids: Sequence[str]) -> dict[str, Any]:
    """A copy of a candidate-search body (``bm25_query`` or ``knn_query``) that never returns the
    fact-checks ``ids``: a ``must_not ids`` clause in the BM25 ``bool``, and in the kNN query's
    filter (applied inside the graph search, so the k nearest *remaining* come back)."""
    out = json.loads(json.dumps(body))
    if not ids:
        return out
    clause = {"ids": {"values": list(ids)}}
    query = out["query"]
    if "knn" in query:
        for knn in query["knn"].values():
            old = knn.get("filter")
            knn["filter"] = {"bool": {**({"filter": [old]} if old else {}), "must_not": [clause]}}
    elif "bool" in query:
        query["bool"]["must_not"] = [*query["bool"].get("must_not", []), clause]
    else:
        raise ValueError(f"cannot exclude ids from a query of kind {sorted(query)}")
    return out


class ExcludingMatcher(Matcher):
    """A ``Matcher`` whose ``match_without`` leaves given fact-checks out of every sub-query,
    as if they were not indexed. Not thread-safe: the exclusion lives on the instance for the
    duration of one call (a lab tool, run sequentially)."""

    _excluded: tuple[str, ...] = ()

    def plan(self, req: MatchRequest, text: str, lang: str | None, config: RetrievalConfig,
             **kw: Any) -> tuple[dict[str, dict[str, Any]], dict[str, float]]:
        bodies, weights = super().plan(req, text, lang, config, **kw)
        if self._excluded:
            bodies = {name: exclude_ids(body, self._excluded) for name, body in bodies.items()}
        return bodies, weights

    def match_without(self, req: MatchRequest, ids: Iterable[str]) -> Any:
        self._excluded = tuple(sorted(ids))
        try:
            return self.match(req)
        finally:
            self._excluded = ()

__all__ = ["DUPLICATE_JACCARD", "ExcludingMatcher", "claim_words", "duplicates_of", "exclude_ids"]
