"""Production embedder for any Hugging Face sentence-transformers model (needs torch).

``sentence_transformers`` (and torch under it) is imported only when this class is built, so the
CLI, the API and ONNX-only deployments never pay for it.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from plugin.embedding.base import check_texts
from plugin.errors import ModelUnavailable

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'factsieve[torch]'"


class SentenceTransformerEmbedder:
    """Wraps ``sentence_transformers.SentenceTransformer`` behind the ``Embedder`` protocol."""

    def __init__(self, name_or_path: str, *, name: str | None = None, query_prefix: str = "",
                 passage_prefix: str = "", max_seq_length: int = 512, batch_size: int = 32,
                 device: str | None = None) -> None:
        self.name = name or name_or_path
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.batch_size = max(1, int(batch_size))
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ModelUnavailable(
                f"embedding model {self.name!r} needs sentence-transformers (torch), which is not "
                f"installed: {INSTALL_HINT} (or use an ONNX model folder)") from exc
        try:
            self._model = SentenceTransformer(name_or_path, device=device)
        except Exception as exc:  # offline without cache, bad name, corrupt files: all fatal here
            raise ModelUnavailable(f"cannot load embedding model {name_or_path!r}: {exc}") from exc
        current = self._model.max_seq_length
        self._model.max_seq_length = min(max_seq_length, current) if current else max_seq_length
        # the new name first: sentence-transformers 6 warns when the old one is called
        get_dim = getattr(self._model, "get_embedding_dimension", None) \
            or getattr(self._model, "get_sentence_embedding_dimension")
        dim = get_dim()
        self.dim = int(dim) if dim else int(self._encode(["dim probe"], "").shape[1])
        log.info("loaded %s (sentence-transformers, dim %d, device %s)", self.name, self.dim,
                 self._model.device)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.query_prefix)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.passage_prefix)

    def _encode(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        items = check_texts(texts)
        if not items:
            return np.zeros((0, getattr(self, "dim", 0)), np.float32)
        if prefix:
            items = [prefix + t for t in items]
        vec = self._model.encode(items, batch_size=self.batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vec, dtype=np.float32)
