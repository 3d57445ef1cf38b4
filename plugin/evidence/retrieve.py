"""Evidence retrieval: hybrid BM25 + kNN over passages, under the task's two constraints.

The constraints are filters pushed into *both* sub-queries (into the Lucene kNN search itself,
never applied after truncation), so no sub-query can let a forbidden passage through:

- **before the claim date**: only passages published strictly before ``before`` (a passage of the
  claim's own day may already report on the claim). Undated passages — most of a scraped
  knowledge store, AVeriTeC's included — are kept by default, since nothing shows they came
  later and dropping them would drop most evidence; ``strict_dates`` excludes them. A result's
  ``published_at`` is ``null`` for them, which is how callers tell.
- **never the claim's own fact-check**: ``exclude_urls`` match by URL key (scheme, ``www.``,
  trailing slash and Wayback wrappers ignored) and ``exclude_domains`` match the domain or any
  parent of it, so excluding ``snopes.com`` also excludes ``www.snopes.com`` pages.

Bodies come from small pure functions (vector in, dict out); ``EvidenceRetriever`` runs both
sub-queries in one ``_msearch``, fuses with the matcher's fusion (``plugin.search.fuse``),
keeps at most ``max_per_url`` passages of one page (so five passages are several sources, not
one page five times), and fetches the ``_source`` of the chosen passages in one more request:
with ``EvidenceQuery.vectors``, that request also reads each passage's stored embedding (a
script field: the vector is not in ``_source``), for selection by passage similarity (MMR)
without embedding the passages again.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from plugin.embedding import Embedder
from plugin.errors import BadInput, NotFound
from plugin.evidence.urls import domain_key, url_key
from plugin.index.store import Store
from plugin.index.templates import check_model
from plugin.models import Fused
from plugin.search.fuse import minmax_fuse, rrf_fuse
from plugin.lang import detect_language
from plugin.search.matcher import MatchRequest
from plugin.search.queries import (VECTOR_SCRIPT, bm25_search, knn_query, read_candidates, sources_by_id,
                                   text_fields)
from plugin.search.retrieval import Fusion, RetrievalConfig, RetrieverKind, retrieval_config
from plugin.search.variants import VARIANTS
from plugin.settings import Settings

#: What a candidate carries before fusion: its id, page and position (for ``per_url``).
CANDIDATE_FIELDS = ["id", "url_key", "position"]
#: ``_source`` fields of a returned passage.
PASSAGE_FIELDS = ["id", "doc_id", "url", "title", "text", "position", "published_at", "domain",
                  "lang", "source", "claim_id"]
_LEAN = {"stored_fields": "_none_", "track_total_hits": False}
UNDATED = {"bool": {"must_not": [{"exists": {"field": "published_at"}}]}}

#: The default evidence configuration, as data in the matcher's configuration model: BM25 and
#: kNN over the question/claim, equal weights, RRF k = 60. Equal weights because there is no
#: evidence benchmark yet to tune them on (on fact-checks the best split was 2:8 for CLEF-2020
#: and 8:2 in FactDebug's monolingual runs: no side wins everywhere). Any named configuration
#: of ``configs/retrieval.json`` made of bm25/dense retrievers works too (``config="bm25"``).
DEFAULT_CONFIG: dict[str, Any] = {
    "name": "evidence-hybrid",
    "description": "Evidence passages: BM25 + kNN, weighted RRF 1:1, k = 60.",
    "retrievers": [{"kind": "bm25", "query": "post", "weight": 1.0},
                   {"kind": "dense", "query": "post", "weight": 1.0}],
    "fusion": "rrf", "rrf_k": 60, "candidates": 50,
}
#: At most this many passages of one page in a result (diversity by source).
MAX_PER_URL = 2

_FUSE = {Fusion.RRF: lambda rankings, weights, cfg: rrf_fuse(rankings, weights, k=cfg.rrf_k),
         Fusion.MINMAX: lambda rankings, weights, cfg: minmax_fuse(rankings, weights)}


@dataclass(frozen=True)
class EvidenceQuery:
    """One evidence search. ``lang`` picks the analysed BM25 fields (detected when ``None``); it
    is not a filter: kNN still finds evidence in other languages. ``claim_id`` restricts the
    search to one claim's knowledge store (the AVeriTeC shared-task setting). ``vectors`` also
    returns each passage's stored embedding (``embedding``) and the query's
    (``EvidenceResult.query_vector``)."""

    text: str
    before: date | None = None
    exclude_urls: tuple[str, ...] = ()
    exclude_domains: tuple[str, ...] = ()
    k: int = 5
    lang: str | None = None
    strict_dates: bool = False
    claim_id: str | None = None
    vectors: bool = False

    def validated(self) -> EvidenceQuery:
        """Text, ``k`` and ``lang`` under the matcher's limits (one rule for both)."""
        MatchRequest(text=self.text, k=self.k, lang=self.lang).validated()
        if self.strict_dates and self.before is None:
            raise BadInput("strict_dates needs a claim date (before): it drops undated passages")
        return self


# ------------------------------------------------------------------------------- pure bodies

def before_clause(before: date, *, strict: bool = False) -> dict[str, Any]:
    """Published strictly before ``before``; undated passages too unless ``strict``."""
    dated = {"range": {"published_at": {"lt": before.isoformat()}}}
    if strict:
        return dated
    return {"bool": {"should": [dated, UNDATED], "minimum_should_match": 1}}


def exclusion_clauses(urls: Sequence[str], domains: Sequence[str]) -> list[dict[str, Any]]:
    """``must_not`` clauses for excluded URLs (by URL key) and domains (and their subdomains);
    blank entries are ignored."""
    keys = sorted({url_key(u) for u in urls if u.strip()})
    names = sorted({domain_key(d) for d in domains if d.strip()})
    return ([{"terms": {"url_key": keys}}] if keys else []) + (
        [{"terms": {"domains": names}}] if names else [])


def evidence_filter(q: EvidenceQuery) -> dict[str, Any] | None:
    """One ``bool`` filter for every restriction of ``q``, or ``None`` when there is none."""
    must: list[dict[str, Any]] = []
    if q.before is not None:
        must.append(before_clause(q.before, strict=q.strict_dates))
    if q.claim_id is not None:
        must.append({"term": {"claim_id": q.claim_id}})
    must_not = exclusion_clauses(q.exclude_urls, q.exclude_domains)
    body = {k: v for k, v in (("filter", must), ("must_not", must_not)) if v}
    return {"bool": body} if body else None


def passage_fields(lang: str | None) -> list[str]:
    """BM25 fields: the matcher's rule (``queries.text_fields``: the language-neutral fields plus
    the language's analysed ones, the main field boosted ×2) with the passage text in the place
    of the claim."""
    return [f.replace("claim", "text", 1) for f in text_fields(lang)]


def bm25_body(text: str, *, lang: str | None, filters: dict[str, Any] | None,
              size: int) -> dict[str, Any]:
    """The matcher's BM25 (``queries.bm25_search``: the neutral fields' stop words added back by
    a rescore of the candidates; every hit counted) over the passage fields."""
    return {"size": size, **_LEAN, "docvalue_fields": list(CANDIDATE_FIELDS),
            **bm25_search(text, passage_fields(lang), lang, filters, size)}


def knn_body(vector: Sequence[float], *, filters: dict[str, Any] | None, size: int) -> dict[str, Any]:
    """The matcher's Lucene kNN body (filter inside the graph search), with evidence fields."""
    return {**knn_query(vector, filters=filters, size=size), "docvalue_fields": list(CANDIDATE_FIELDS)}


def sources_body(ids: Sequence[str], *, vectors: bool = False) -> dict[str, Any]:
    """The chosen passages' fields, and with ``vectors`` their stored embeddings too."""
    body = {"size": len(ids), "_source": PASSAGE_FIELDS, "track_total_hits": False,
            "query": {"terms": {"id": list(ids)}}}
    return {**body, "script_fields": {"embedding": VECTOR_SCRIPT}} if vectors else body


def vectors_by_id(response: dict[str, Any]) -> dict[str, list[float]]:
    """``{id: embedding}`` from a ``sources_body(..., vectors=True)`` response."""
    return {str((h.get("_source") or {}).get("id", h.get("_id"))): h["fields"]["embedding"]
            for h in response["hits"]["hits"] if (h.get("fields") or {}).get("embedding")}


def per_url(fused: Sequence[Fused], max_per_url: int, k: int) -> list[Fused]:
    """The first ``k`` of ``fused`` with at most ``max_per_url`` passages of one page (by URL
    key), re-ranked 1…k. A passage of a page already kept at the same position (the same page
    from another claim's knowledge store) is a duplicate and skipped; a passage without a URL
    key doc value (written by another tool) counts as its own page."""
    pages: dict[str, int] = {}
    seen: set[tuple[str, Any]] = set()
    kept: list[Fused] = []
    for f in fused:
        src = f.source or {}
        page = str(src.get("url_key") or f.id)
        if pages.get(page, 0) >= max_per_url or (page, src.get("position")) in seen:
            continue
        pages[page] = pages.get(page, 0) + 1
        seen.add((page, src.get("position")))
        kept.append(Fused(id=f.id, score=f.score, rank=len(kept) + 1, contributions=f.contributions))
        if len(kept) >= k:
            break
    return kept


# ------------------------------------------------------------------------------- retriever

@dataclass(frozen=True)
class EvidenceResult:
    """The passages found (best first), the language the text was searched in, and timings;
    with ``EvidenceQuery.vectors``, the query's embedding (each passage carries its own)."""

    passages: list[dict[str, Any]]
    lang: str | None
    config: str
    took_ms: float
    timings_ms: dict[str, float]
    query_vector: list[float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"lang": self.lang, "config": self.config, "took_ms": round(self.took_ms, 2),
                "passages": self.passages}


class EvidenceRetriever:
    """Hybrid evidence search over the evidence alias, driven by a retrieval configuration.

    ``config`` is a ``RetrievalConfig``, a name from ``configs/retrieval.json``, or ``None`` for
    ``DEFAULT_CONFIG``. Its retrievers, weights (the crosslingual ones where they differ),
    fusion, ``rrf_k`` and ``candidates`` are used; mode, boosts, collapse and a rerank stage
    belong to fact-check matching and are not applied to evidence.
    """

    def __init__(self, store: Store, embedder: Embedder, settings: Settings, *,
                 alias: str | None = None, config: RetrievalConfig | str | None = None,
                 max_per_url: int = MAX_PER_URL) -> None:
        self.store = store
        self.embedder = embedder
        self.alias = alias or settings.evidence_index
        self.config = (config if isinstance(config, RetrievalConfig) else retrieval_config(config)
                       if config else RetrievalConfig.model_validate(DEFAULT_CONFIG))
        if max_per_url < 1:
            raise BadInput("max_per_url must be >= 1")
        self.max_per_url = max_per_url
        self._model_checked = False

    def _check_model(self) -> None:
        if self._model_checked:
            return
        try:
            check_model(self.store, self.alias, self.embedder.name, self.embedder.dim)
        except NotFound:
            raise NotFound(f"no evidence index behind alias {self.alias!r}: load evidence with "
                           f"`factsieve ingest-evidence` first") from None
        self._model_checked = True

    def plan(self, q: EvidenceQuery, lang: str | None
             ) -> tuple[dict[str, dict[str, Any]], dict[str, float], list[float] | None]:
        """The sub-query bodies (by retriever name), fusion weights and, with ``q.vectors``, the
        query's embedding (the ``post`` variant's, embedded here when no dense retriever uses
        it): pure except for embedding the dense variants (one batch)."""
        cfg = self.config
        unknown = {r.query for r in cfg.retrievers} - set(VARIANTS)
        if unknown:
            raise BadInput(f"configuration {cfg.name!r} uses query variants {sorted(unknown)} "
                           f"that need a generator this deployment lacks; known: {sorted(VARIANTS)}")
        flt = evidence_filter(q)
        size = max(cfg.candidates, 2 * q.k)  # room for per_url to skip passages
        dense = sorted({r.query for r in cfg.retrievers if r.kind is RetrieverKind.DENSE}
                       | ({"post"} if q.vectors else set()))
        texts = {v: VARIANTS[v](q.text, lang) for v in {r.query for r in cfg.retrievers} | set(dense)}
        vectors = dict(zip(dense, self.embedder.encode_queries([texts[v] for v in dense]))) if dense else {}
        bodies = {r.name: (bm25_body(texts[r.query], lang=lang, filters=flt, size=size)
                           if r.kind is RetrieverKind.BM25 else
                           knn_body(vectors[r.query], filters=flt, size=size))
                  for r in cfg.retrievers}
        query_vector = [float(x) for x in vectors["post"]] if q.vectors else None
        # evidence is searched in every language, as the matcher's cross/auto modes are
        return bodies, cfg.weights(crosslingual=True), query_vector

    def search(self, q: EvidenceQuery) -> EvidenceResult:
        q = q.validated()
        t0 = time.perf_counter()
        self._check_model()
        lang = q.lang or detect_language(q.text)
        bodies, weights, query_vector = self.plan(q, lang)
        t1 = time.perf_counter()
        responses = self.store.msearch(self.alias, list(bodies.values()))
        rankings = {name: read_candidates(resp, name) for name, resp in zip(bodies, responses)}
        t2 = time.perf_counter()
        top = per_url(_FUSE[self.config.fusion](rankings, weights, self.config), self.max_per_url, q.k)
        got = (self.store.search(self.alias, sources_body([f.id for f in top], vectors=q.vectors))
               if top else None)
        found = sources_by_id(got) if got else {}
        t3 = time.perf_counter()
        passages = [passage_dict(f, found.get(f.id) or {}) for f in top]
        if q.vectors:
            stored = vectors_by_id(got) if got else {}
            passages = [{**p, "embedding": stored.get(p["id"])} for p in passages]
        timings = {"embed_ms": (t1 - t0) * 1e3, "search_ms": (t2 - t1) * 1e3, "fetch_ms": (t3 - t2) * 1e3}
        return EvidenceResult(lang=lang, passages=passages, took_ms=(t3 - t0) * 1e3,
                              config=self.config.name, timings_ms=timings, query_vector=query_vector)


def passage_dict(f: Fused, source: dict[str, Any]) -> dict[str, Any]:
    """A result passage: rank, fused score, its fields, and which sub-query found it where."""
    explain = {q: {"rank": h.rank, "score": round(h.score, 6)} for q, h in sorted(f.contributions.items())}
    return {"id": f.id, "rank": f.rank, "score": round(f.score, 6),
            **{name: source.get(name) for name in PASSAGE_FIELDS if name != "id"}, "explain": explain}
