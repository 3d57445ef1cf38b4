"""What a match answers: ``MatchResult``, each match as a dict, and the stage timings."""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from plugin.models import STORED_FIELDS, Fused


@dataclass(frozen=True)
class MatchResult:
    lang: str | None
    matches: list[dict[str, Any]]
    took_ms: float
    config: str = ""
    timings_ms: dict[str, float] = field(default_factory=dict)
    reranked: bool = False
    notes: tuple[str, ...] = ()
    #: where the sub-queries were fused: ``client`` (one ``_msearch`` + ``plugin.search.fuse``)
    #: or ``server`` (one hybrid query through a neural-search pipeline)
    fusion: str = "client"
    #: each match's ``calibration.FEATURES`` row (client-side fusion only), for the lab
    features: Any = None
    #: the post's image as read (``ImageAnalysis.to_dict``: its hash, and the OCR text matched),
    #: ``None`` for a post without one
    image: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"lang": self.lang, "config": self.config, "took_ms": round(self.took_ms, 2),
               "reranked": self.reranked, "notes": list(self.notes), "matches": self.matches}
        if self.image is not None:
            out["image"] = self.image
        return out


class Stopwatch:
    """Milliseconds spent in each stage of one match, a stage's spans summed
    (``with watch("fetch_ms"): ...``); every stage is reported, 0 when it did not run."""

    STAGES = ("normalize_ms", "embed_ms", "search_ms", "fetch_ms", "fuse_ms", "rerank_ms")

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.ms = dict.fromkeys(self.STAGES, 0.0)

    @contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.ms[stage] += (time.perf_counter() - t0) * 1e3

    def total_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1e3


def with_source(f: Fused, source: dict[str, Any] | None) -> Fused:
    """``f`` with ``source`` on each contributing hit (explanations keep their ranks/scores)."""
    if source is None:
        return f
    return replace(f, contributions={q: replace(h, source=source) for q, h in f.contributions.items()})


def match_dict(f: Fused, rerank_score: float | None = None,
               confidence: float | None = None) -> dict[str, Any]:
    """One match as the API shows it: the stored fields, fused score and rank, confidence, and
    each sub-query's (and the reranker's) rank and score under ``explain``."""
    src = f.source or {}
    explain: dict[str, Any] = {q: {"rank": h.rank, "score": round(h.score, 6)}
                               for q, h in sorted(f.contributions.items())}
    if rerank_score is not None:
        explain["rerank"] = {"score": round(float(rerank_score), 6)}
    return {"id": f.id, "score": round(f.score, 6), "rank": f.rank,
            "confidence": None if confidence is None else round(confidence, 4),
            **{name: src.get(name) for name in STORED_FIELDS if name != "id"}, "explain": explain}


#: what learning may add to a match, in the order a match's JSON shows it
_LEARNED = ("reason", "memory", "confidence_packaged")


@dataclass(frozen=True)
class Candidate:
    """One fact-check a match answers with, typed from the matcher through learning, the desk,
    auto-confirm and webhooks; ``to_dict`` is its JSON (the API's, a webhook's, a job's), the
    one place that shape is written."""
    id: str
    score: float
    rank: int
    confidence: float | None
    #: the stored fact-check fields (``models.STORED_FIELDS`` but ``id``), ``None`` where unset
    fields: dict[str, Any]
    #: each sub-query's (and the reranker's) rank and score (``match_dict``)
    explain: dict[str, Any] = field(default_factory=dict)
    #: what found it (``plugin.search.images.signals``); ``None`` for a match learning added
    signals: Any = None
    #: ``confirmed-by-desk`` when the tenant's memory put it here (``plugin.learn.memory``)
    reason: str | None = None
    memory: dict[str, Any] | None = None
    #: the packaged confidence when the tenant's recalibration replaced ``confidence``
    confidence_packaged: float | None = None

    @property
    def claim(self) -> str | None:
        return self.fields.get("claim")

    @classmethod
    def from_dict(cls, m: dict[str, Any]) -> Candidate:
        known = {"id", "score", "rank", "confidence", "explain", "signals", *STORED_FIELDS, *_LEARNED}
        unknown = set(m) - known
        if unknown:
            raise ValueError(f"a match has fields no Candidate knows: {sorted(unknown)}")
        return cls(id=m["id"], score=m["score"], rank=m["rank"], confidence=m.get("confidence"),
                   fields={name: m.get(name) for name in STORED_FIELDS if name != "id"},
                   explain=m.get("explain") or {}, signals=m.get("signals"),
                   **{k: m.get(k) for k in _LEARNED})

    def to_dict(self) -> dict[str, Any]:
        out = {"id": self.id, "score": self.score, "rank": self.rank, "confidence": self.confidence,
               **self.fields, "explain": self.explain}
        if self.signals is not None:
            out["signals"] = self.signals
        for k in _LEARNED:
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        return out


@dataclass(frozen=True)
class Match:
    """What matching a post answers, after the tenant's learning (``plugin.service.matching``):
    typed between the stages, ``to_dict`` at the edges (the API's ``MatchOut``, ``post.matched``
    payloads, job records). ``versions`` (the models that served it) and ``features`` (the
    calibration features, for the lab) stay off the JSON."""
    lang: str | None
    config: str
    took_ms: float
    candidates: tuple[Candidate, ...]
    reranked: bool = False
    notes: tuple[str, ...] = ()
    image: dict[str, Any] | None = None
    fusion: str = "client"
    versions: dict[str, Any] = field(default_factory=dict)
    features: Any = None

    @classmethod
    def of(cls, result: MatchResult, versions: dict[str, Any] | None = None) -> Match:
        """The matcher's result as a typed match (before learning)."""
        return cls(lang=result.lang, config=result.config, took_ms=result.took_ms,
                   candidates=tuple(Candidate.from_dict(m) for m in result.matches),
                   reranked=result.reranked, notes=tuple(result.notes), image=result.image,
                   fusion=result.fusion, versions=dict(versions or {}), features=result.features)

    @classmethod
    def from_dict(cls, d: dict[str, Any], versions: dict[str, Any] | None = None) -> Match:
        """A match read back from its JSON (a test's table, a stored job result, a synthetic
        desk's), with the ``versions`` that served it."""
        return cls(lang=d.get("lang"), config=d.get("config") or "", took_ms=d.get("took_ms", 0.0),
                   candidates=tuple(Candidate.from_dict(m) for m in d.get("matches") or ()),
                   reranked=bool(d.get("reranked")), notes=tuple(d.get("notes") or ()), image=d.get("image"),
                   versions=dict(versions or {}))

    def to_dict(self) -> dict[str, Any]:
        out = {"lang": self.lang, "config": self.config, "took_ms": round(self.took_ms, 2),
               "reranked": self.reranked, "notes": list(self.notes),
               "matches": [c.to_dict() for c in self.candidates]}
        if self.image is not None:
            out["image"] = self.image
        return out

    @property
    def best(self) -> Candidate | None:
        return self.candidates[0] if self.candidates else None
