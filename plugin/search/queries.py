"""Pure builders of OpenSearch query bodies.

Each function takes typed inputs (the query *vector*, never the model) and returns a dict, so
every body can be checked against an expected table without a server. Filters are built once
and pushed into both the BM25 query and the Lucene kNN query (efficient filtering), never
applied after truncation.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from itertools import islice
from typing import Any

from plugin.index.bodies import ANALYZED_LANGS
from plugin.models import STORED_FIELDS, Hit
from plugin.search.stopwords import split_stopwords

#: ``_source`` fields of a final match (the embedding is never sent back).
SOURCE_FIELDS = list(STORED_FIELDS)

#: The vector is not in ``_source`` (see the knn component template); a script field reads it
#: from the vector doc values, exactly as indexed (float32). ``getValue()`` returns a buffer the
#: doc-values reader reuses for the next document, and hits are serialised after all of them are
#: read: returned as is, every hit of a batch would carry the last document's vector. So copy it.
VECTOR_SCRIPT = {"script": {"lang": "painless", "source": (
    "def v = doc['embedding'].getValue(); def out = new ArrayList();"
    " for (int i = 0; i < v.length; ++i) { out.add(v[i]); } return out;")}}

#: What a candidate carries before fusion: keyword doc values, enough to fuse (``id``), boost
#: trusted sources (``domain``, ``publisher``) and prefer the post's language (``lang``).
CANDIDATE_FIELDS = ["id", "lang", "domain", "publisher"]

#: Candidate searches read no stored field, ``_id`` and ``_source`` included: fetching either
#: decompresses the stored-field block of every hit, which cost 10-20 ms for 100 hits when the
#: vector was in ``_source`` (and still costs while ``_recovery_source`` holds it, until a merge).
#: Doc values are columnar and cheap. Only the final matches get their ``_source`` (``sources_query``).
_CANDIDATE_BODY: dict[str, Any] = {"stored_fields": "_none_", "docvalue_fields": CANDIDATE_FIELDS,
                                   "track_total_hits": False}
#: How a BM25 candidate search counts its hits: all of them. Counting lets Lucene score the
#: disjunction window by window over every posting (its bulk scorer) instead of skipping
#: non-competitive blocks one document at a time, and on our queries (a post's every word over
#: four fields) the bulk scorer is the faster: ``factsieve bench --levers`` measures both
#: (``as-served`` against ``count-all``; docs/reports/2026-11-27-bench-1m.md). The one place.
BM25_TRACK_TOTAL_HITS = True
#: How deep the rescore that adds the neutral fields' stop words back reaches, in multiples of
#: the candidates asked for (``bm25_query``): a fact-check whose stop words lift it into the top
#: ``size`` sits within the first ``size`` × this of the selecting clause (the client and the
#: server fusion paths rank alike: tests/integration/test_fusion_contract.py).
BM25_RESCORE_DEPTH = 4


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
        # a window reaching before year 1 starts at year 1 (date arithmetic would overflow)
        start = before - timedelta(days=min(within_days, before.toordinal() - 1))
        rng["gte"] = start.isoformat()
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


#: Words of a post the BM25 query uses. Each word becomes a clause per field, and Lucene refuses
#: a query of more than 1,024 clauses (a 20,000-character post of distinct words gave a 502);
#: the dense half reads only the first 256 tokens anyway. Posts and claims are far shorter.
BM25_MAX_WORDS = 200
#: Terms (as the analyzers cut them, counted generously) the BM25 query uses: 1,024 clauses over
#: at most four fields (``text_fields``). One "word" can hold thousands of terms: "a@a@a@…" or
#: "http://http://…" split at every '@' and ':', and Chinese or Japanese at every character.
BM25_MAX_TERMS = 256
_KANA_HAN = "\u3040-\u309f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
#: A term: one Han or kana character, or a run of other letters and digits. Single character
#: classes, so finditer is linear.
_TERM = re.compile(f"[{_KANA_HAN}]|[^\\W_{_KANA_HAN}]+")


def bm25_text(text: str) -> str:
    """The first ``BM25_MAX_WORDS`` words of ``text``, cut after its ``BM25_MAX_TERMS``-th term
    when more follow: what every BM25 query of ours searches."""
    words = text.split()
    if len(words) > BM25_MAX_WORDS:
        text = " ".join(words[:BM25_MAX_WORDS])
    terms = islice(_TERM.finditer(text), BM25_MAX_TERMS - 1, BM25_MAX_TERMS + 1)
    last, more = next(terms, None), next(terms, None)
    return text[:last.end()] if last is not None and more is not None else text


def bm25_clauses(text: str, fields: Sequence[str], lang: str | None, split: bool = True
                 ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``(match, stop)``: the BM25 clause that selects candidates and the clause a rescore adds
    to them (``None``: nothing to add). Together they score exactly what one ``most_fields``
    match of ``text`` over ``fields`` scores (BM25 adds up per field and per term), but the
    selecting clause leaves the stop words of ``lang`` (``plugin.search.stopwords``) out of the
    language-neutral fields, whose postings of them span nearly the whole corpus; the analysed
    fields (``*_i18n.*``) drop them themselves. A candidate that only its stop words would have
    brought into the top ``size`` from beyond the rescore's reach is the one thing lost.
    ``split=False``: the one match, stop words selecting too (pure)."""
    text = bm25_text(text)
    analysed = [f for f in fields if "_i18n." in f]
    neutral = [f for f in fields if "_i18n." not in f]
    content, stop = split_stopwords(text, lang) if split and analysed and neutral else (text, "")
    if not stop:
        return {"multi_match": {"query": text, "fields": list(fields), "type": "most_fields"}}, None
    match = {"bool": {"should": [{"multi_match": {"query": text, "fields": analysed, "type": "most_fields"}},
                                 {"multi_match": {"query": content, "fields": neutral, "type": "most_fields"}}]}}
    return match, {"multi_match": {"query": stop, "fields": neutral, "type": "most_fields"}}


def rescore_adding(clause: dict[str, Any], window: int) -> dict[str, Any]:
    """A rescore that adds ``clause``'s score to the first ``window`` hits' (pure)."""
    return {"window_size": window, "query": {"rescore_query": clause, "query_weight": 1.0,
                                             "rescore_query_weight": 1.0, "score_mode": "total"}}


def bm25_search(text: str, fields: Sequence[str], lang: str | None, filters: dict[str, Any] | None,
                size: int, split: bool = True) -> dict[str, Any]:
    """The search part of every BM25 candidate body (fact-checks here, evidence passages in
    ``plugin.evidence.retrieve``): how hits are counted, the query (``bm25_clauses`` under the
    filters) and the rescore that adds the stop words back to the first ``size`` ×
    ``BM25_RESCORE_DEPTH`` hits (pure)."""
    match, stop = bm25_clauses(text, fields, lang, split)
    query: dict[str, Any] = {"bool": {"must": [match]}}
    if filters:
        query["bool"]["filter"] = [filters]
    out: dict[str, Any] = {"track_total_hits": BM25_TRACK_TOTAL_HITS, "query": query}
    if stop is not None:
        out["rescore"] = rescore_adding(stop, size * BM25_RESCORE_DEPTH)
    return out


def bm25_query(text: str, *, lang: str | None, filters: dict[str, Any] | None,
               size: int, split: bool = True) -> dict[str, Any]:
    """BM25 over claim and title (``most_fields``: each analysed variant adds evidence), the
    neutral fields' stop words added back by a rescore (``bm25_search``), the best ``size``
    returned. ``split=False``: one match, stop words selecting too, as the stored search template
    and a min-max fusion need (``plan.MatchPlan.queries``)."""
    return {"size": size, **_candidate_body(), **bm25_search(text, text_fields(lang), lang, filters, size, split)}


def whole_query(body: dict[str, Any]) -> dict[str, Any]:
    """The ``query`` of a candidate body with its rescore folded in (``bm25_query``'s stop-word
    clause as a ``should``), for where a rescore cannot go: a ``hybrid`` query's sub-queries."""
    rescore = body.get("rescore")
    if not rescore:
        return body["query"]
    return {"bool": {"must": [body["query"]], "should": [rescore["query"]["rescore_query"]]}}


#: Candidates the HNSW search explores (Lucene's ef) when asked for fewer: ef = k loses part of
#: the exact top k on a merged index, and what a larger ef recovers grows with the corpus; 400
#: keeps recall@10 near exact from ten thousand to a million fact-checks for a few milliseconds
#: (docs/design/measurements.md).
KNN_EF_SEARCH = 400


def knn_query(vector: Sequence[float], *, filters: dict[str, Any] | None, size: int,
              field: str = "embedding", ef_search: int | None = None) -> dict[str, Any]:
    """Approximate kNN on the Lucene engine, with the filter applied inside the graph search:
    the ``size`` nearest of the ``max(size, ef_search)`` the graph search collects."""
    knn: dict[str, Any] = {"vector": [float(x) for x in vector], "k": size}
    ef = KNN_EF_SEARCH if ef_search is None else ef_search
    if ef > size:
        knn["method_parameters"] = {"ef_search": ef}
    if filters:
        knn["filter"] = filters
    return {"size": size, **_candidate_body(), "query": {"knn": {field: knn}}}


def knn_vector(body: Mapping[str, Any]) -> list[float] | None:
    """The query vector of a ``knn_query`` body (pure; ``None`` for any other body)."""
    knn = (body.get("query") or {}).get("knn")
    if not isinstance(knn, Mapping) or not knn:
        return None
    return next(iter(knn.values())).get("vector")


def _candidate_body() -> dict[str, Any]:
    return {k: list(v) if isinstance(v, list) else v for k, v in _CANDIDATE_BODY.items()}


def sources_query(ids: Sequence[str]) -> dict[str, Any]:
    """The ``_source`` of the given fact-checks (by their ``id`` field, which is also ``_id``)."""
    return {"size": len(ids), "_source": SOURCE_FIELDS, "track_total_hits": False,
            "query": {"terms": {"id": list(ids)}}}


def read_candidates(response: dict[str, Any], query: str) -> list[Hit]:
    """1-based ranked hits of one candidate search. A hit's ``source`` is its doc-value fields
    (single values unwrapped), or its ``_source`` when the body asked for one; its id is ``_id``
    when returned, else the ``id`` doc value."""
    return [Hit(id=_hit_id(h), score=float(h.get("_score") or 0.0), rank=i, query=query,
                source=_hit_fields(h))
            for i, h in enumerate(response["hits"]["hits"], start=1)]


def _hit_fields(hit: dict[str, Any]) -> dict[str, Any]:
    if hit.get("_source") is not None:
        return hit["_source"]
    return {k: v[0] if isinstance(v, list) and len(v) == 1 else v
            for k, v in (hit.get("fields") or {}).items()}


def _hit_id(hit: dict[str, Any]) -> str:
    if "_id" in hit:
        return str(hit["_id"])
    values = (hit.get("fields") or {}).get("id")
    if not values:
        raise ValueError("a candidate hit has neither _id nor an id doc value")
    return str(values[0])


def sources_by_id(response: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{id: _source}`` from a ``sources_query`` response."""
    return {str(h["_source"].get("id", h.get("_id"))): h["_source"]
            for h in response["hits"]["hits"] if h.get("_source") is not None}
