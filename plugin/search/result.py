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
