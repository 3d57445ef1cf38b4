"""Pure builders of OpenSearch query bodies.

Each function takes typed inputs (the query *vector*, never the model) and returns a dict, so
every body can be checked against an expected table without a server. Filters are built once
and pushed into both the BM25 query and the Lucene kNN query (efficient filtering), never
applied after truncation.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, Sequence

#: Languages with a dedicated analysed sub-field (``claim_i18n.<lang>``) in the templates.
ANALYZED_LANGS = ("en", "es", "fr", "de", "pt", "ar", "tr", "pl", "th", "ms", "ko", "hi")

#: Fields returned with every hit (the embedding is never sent back).
SOURCE_FIELDS = ["id", "claim", "title", "url", "domain", "publisher", "rating", "verdict",
                 "lang", "published_at", "claimant", "source"]


@dataclass(frozen=True)
class Filters:
    """Restrictions on which fact-checks may match.

    ``langs``: only these languages (monolingual mode passes the post's language).
    ``published_before``: only fact-checks published on or before this date; fact-checks
    without a date are kept, since nothing shows they came later. ``within_days`` narrows that
    to a window ending at ``published_before``. Allow/deny lists match ``domain`` or ``publisher``.
    """

    langs: tuple[str, ...] | None = None
    published_before: date | None = None
    within_days: int | None = None
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()


def lang_clause(langs: Sequence[str]) -> dict[str, Any]:
    return {"terms": {"lang": list(langs)}}


def date_clause(before: date, within_days: int | None = None) -> dict[str, Any]:
    rng: dict[str, Any] = {"lte": before.isoformat()}
    if within_days is not None:
        rng["gte"] = (before - timedelta(days=within_days)).isoformat()
        # a window asks for dated fact-checks only
        return {"range": {"published_at": rng}}
    return {"bool": {"should": [{"range": {"published_at": rng}},
                                {"bool": {"must_not": [{"exists": {"field": "published_at"}}]}}],
                     "minimum_should_match": 1}}


def source_clause(names: Sequence[str]) -> dict[str, Any]:
    """Matches a fact-check whose domain or publisher is one of ``names``."""
    return {"bool": {"should": [{"terms": {"domain": list(names)}},
                                {"terms": {"publisher": list(names)}}],
                     "minimum_should_match": 1}}


def filter_query(f: Filters) -> dict[str, Any] | None:
    """One ``bool`` filter for all restrictions, or ``None`` when there are none."""
    must: list[dict[str, Any]] = []
    must_not: list[dict[str, Any]] = []
    if f.langs:
        must.append(lang_clause(f.langs))
    if f.published_before is not None:
        must.append(date_clause(f.published_before, f.within_days))
    if f.allow:
        must.append(source_clause(f.allow))
    if f.deny:
        must_not.append(source_clause(f.deny))
    if not must and not must_not:
        return None
    body: dict[str, Any] = {}
    if must:
        body["filter"] = must
    if must_not:
        body["must_not"] = must_not
    return {"bool": body}


def text_fields(lang: str | None) -> list[str]:
    """BM25 fields: the language-neutral ones, plus the post language's analysed sub-fields."""
    fields = ["claim^2", "title"]
    if lang in ANALYZED_LANGS:
        fields = [f"claim_i18n.{lang}^2", f"title_i18n.{lang}", *fields]
    return fields


def bm25_query(text: str, *, lang: str | None, filters: dict[str, Any] | None,
               size: int) -> dict[str, Any]:
    """BM25 over claim and title (``most_fields``: each analysed variant adds evidence)."""
    match = {"multi_match": {"query": text, "fields": text_fields(lang), "type": "most_fields"}}
    query: dict[str, Any] = {"bool": {"must": [match]}}
    if filters:
        query["bool"]["filter"] = [filters]
    return {"size": size, "_source": SOURCE_FIELDS, "query": query}


def knn_query(vector: Sequence[float], *, filters: dict[str, Any] | None, size: int,
              field: str = "embedding") -> dict[str, Any]:
    """Approximate kNN on the Lucene engine, with the filter applied inside the graph search."""
    knn: dict[str, Any] = {"vector": [float(x) for x in vector], "k": size}
    if filters:
        knn["filter"] = filters
    return {"size": size, "_source": SOURCE_FIELDS, "query": {"knn": {field: knn}}}
