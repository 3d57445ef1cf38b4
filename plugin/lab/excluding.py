"""Matching as if some fact-checks were not indexed, and the near-duplicates that go with them.

The lab's lookup threshold and confidence calibration both need a post run against an index
without the fact-checks that answer it: ``ExcludingMatcher`` pushes an ``ids`` ``must_not`` into
every sub-query (``exclude_ids``), and ``duplicates_of`` widens the left-out set to the same claim
fact-checked again (word-set Jaccard, the test of ``matcher.same_claim``).
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from plugin.search.matcher import Matcher, MatchRequest
from plugin.search.retrieval import RetrievalConfig

#: word-set Jaccard from which two fact-checks' claims count as one (``matcher.same_claim``)
DUPLICATE_JACCARD = 0.8
_WORD = re.compile(r"\w+", re.UNICODE)  # as matcher.same_claim tokenises


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


def claim_words(claims: dict[str, str]) -> dict[str, frozenset[str]]:
    """Each fact-check's claim as the lower-cased word set ``matcher.same_claim`` compares."""
    return {i: frozenset(_WORD.findall(c.lower())) for i, c in claims.items()}


def duplicates_of(ids: Iterable[str], words: dict[str, frozenset[str]], *,
                  threshold: float = DUPLICATE_JACCARD) -> set[str]:
    """``ids`` and every fact-check whose claim is a near-duplicate of one of theirs: word-set
    Jaccard ≥ ``threshold``, the test of ``matcher.same_claim`` over ``claim_words``."""
    found = set(ids)
    for i in list(found):
        a = words.get(i)
        if not a:
            continue
        found |= {j for j, b in words.items()
                  if b and j not in found and len(a & b) / len(a | b) >= threshold}
    return found


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
