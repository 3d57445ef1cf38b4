"""The one interface the rest of FactSieve sees for text embeddings."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of shape ``(n, dim)``.

    Queries and passages are separate calls because asymmetric models (e5) need different
    prefixes; the embedder applies them, callers pass raw text. ``name`` is the model name as
    configured: it is recorded in the index ``_meta`` to detect model mismatches.
    """

    name: str
    dim: int

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray: ...


def check_texts(texts: Sequence[str]) -> list[str]:
    """A bare ``str`` is a sequence of characters: refuse it instead of embedding letters."""
    if isinstance(texts, str):
        raise TypeError("expected a sequence of texts, got a single str")
    return list(texts)
