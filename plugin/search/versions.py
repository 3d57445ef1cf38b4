"""The models behind a match, by name: what a review decision records with it (``plugin.review``),
so a decision can become a training pair later without re-running anything."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from plugin.search.retrieval import retrieval_config

if TYPE_CHECKING:
    from plugin.search.matcher import Matcher
    from plugin.search.result import MatchResult


def versions_of(matcher: Matcher, result: MatchResult) -> dict[str, Any]:
    """The retrieval configuration, the embedding model, the query tower that embedded the post,
    the reranker when it ran, and the confidence model (``None`` where none served)."""
    cfg = retrieval_config(result.config) if result.config else matcher.config
    tower = cfg.query_encoder if cfg.query_encoder and matcher.query_encoder_note(cfg) is None else None
    reranker = None
    if result.reranked and cfg.rerank is not None:
        reranker = getattr(matcher.reranker, "name", None) or cfg.rerank.model
    calibrated = any(m.get("confidence") is not None for m in result.matches)
    return {"retrieval_config": cfg.name, "embedding_model": matcher.embedder.name,
            "query_tower": tower, "reranker": reranker,
            "calibrator": (cfg.calibrator or cfg.name) if calibrated else None}
