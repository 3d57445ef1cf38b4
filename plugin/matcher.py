"""Claim matching: a post in any language → the fact-checks that address it.

``Matcher`` is the one place where the embedder, the store and fusion meet: it normalises the
post, detects its language, embeds it once, runs BM25 and kNN (filters pushed into both) in one
``_msearch`` round trip, and fuses the rankings with weighted RRF.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from .embedding import Embedder
from .errors import BadInput
from .fuse import hits_from_response, rrf_fuse
from .lang import detect_language
from .models import Mode
from .normalize import normalize_post
from .queries import Filters, bm25_query, filter_query, knn_query
from .settings import Settings
from .store import Store
from .templates import check_model

#: Default per-retriever weights for RRF (dense first: on CLEF-2020 dense beats BM25 alone).
DEFAULT_WEIGHTS = {"bm25": 1.0, "dense": 1.0}
_LANG = re.compile(r"^[a-z]{2,3}$")


@dataclass(frozen=True)
class MatchRequest:
    text: str
    lang: str | None = None
    date: date | None = None
    mode: Mode = Mode.CROSS
    k: int = 10
    within_days: int | None = None
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    def validated(self) -> MatchRequest:
        if not self.text or not self.text.strip():
            raise BadInput("text is empty: give the post or claim to match")
        if not 1 <= self.k <= 100:
            raise BadInput(f"k must be between 1 and 100, got {self.k}")
        if self.lang is not None and not _LANG.match(self.lang):
            raise BadInput(f"lang must be an ISO 639-1 code such as 'en', got {self.lang!r}")
        if self.within_days is not None and self.within_days < 0:
            raise BadInput("within_days must be >= 0")
        return self


@dataclass(frozen=True)
class MatchResult:
    lang: str | None
    matches: list[dict[str, Any]]
    took_ms: float
    timings_ms: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"lang": self.lang, "took_ms": round(self.took_ms, 2), "matches": self.matches}


class Matcher:
    """Hybrid BM25 + kNN claim matcher over the fact-check alias."""

    def __init__(self, store: Store, embedder: Embedder, settings: Settings, *,
                 alias: str | None = None, weights: dict[str, float] | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.alias = alias or settings.index
        self.weights = dict(weights or DEFAULT_WEIGHTS)
        self._model_checked = False

    def _check_model(self) -> None:
        if not self._model_checked:
            check_model(self.store, self.alias, self.embedder.name, self.embedder.dim)
            self._model_checked = True

    def filters_for(self, req: MatchRequest, lang: str | None) -> Filters:
        langs = (lang,) if req.mode is Mode.MONO and lang else None
        return Filters(langs=langs, published_before=req.date, within_days=req.within_days,
                       allow=tuple(req.allow), deny=tuple(req.deny))

    def match(self, req: MatchRequest) -> MatchResult:
        req = req.validated()
        t0 = time.perf_counter()
        self._check_model()
        text = normalize_post(req.text) or req.text.strip()
        lang = req.lang or detect_language(text, seed=self.settings.langdetect_seed)
        t1 = time.perf_counter()
        vector = self.embedder.encode_queries([text])[0]
        t2 = time.perf_counter()
        flt = filter_query(self.filters_for(req, lang))
        size = max(self.settings.candidates, req.k)
        bodies = {"bm25": bm25_query(text, lang=lang, filters=flt, size=size),
                  "dense": knn_query(vector, filters=flt, size=size)}
        responses = self.store.msearch(self.alias, list(bodies.values()))
        t3 = time.perf_counter()
        rankings = {name: hits_from_response(resp, name) for name, resp in zip(bodies, responses)}
        fused = rrf_fuse(rankings, self.weights, k=self.settings.rrf_k)[: req.k]
        matches = [_match_dict(f) for f in fused]
        t4 = time.perf_counter()
        timings = {"normalize_ms": (t1 - t0) * 1e3, "embed_ms": (t2 - t1) * 1e3,
                   "search_ms": (t3 - t2) * 1e3, "fuse_ms": (t4 - t3) * 1e3}
        return MatchResult(lang=lang, matches=matches, took_ms=(t4 - t0) * 1e3, timings_ms=timings)


def _match_dict(f: Any) -> dict[str, Any]:
    src = f.source or {}
    return {
        "id": f.id, "score": round(f.score, 6), "rank": f.rank,
        "claim": src.get("claim"), "title": src.get("title"), "url": src.get("url"),
        "lang": src.get("lang"), "published_at": src.get("published_at"),
        "rating": src.get("rating"), "verdict": src.get("verdict"),
        "publisher": src.get("publisher"),
        "explain": {q: {"rank": h.rank, "score": round(h.score, 6)}
                    for q, h in sorted(f.contributions.items())},
    }
