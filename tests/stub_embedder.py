"""The one stand-in for an ``Embedder`` (``plugin.embedding.base``) in unit tests: vectors from a
function of each text, a name and a dimension, and a record of the batches it was asked for."""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence

import numpy as np

Vector = Callable[[str], Sequence[float]]


class StubEmbedder:
    """``query(text)`` gives each query's vector (default ``[len(text), 1, 0]``, which tells texts
    apart by length) and ``passage(text)`` each passage's (default: the same). ``calls`` holds
    each batch's texts, ``counts`` each batch's kind (``"q"``/``"p"``) and size."""

    def __init__(self, query: Vector | None = None, passage: Vector | None = None, *,
                 dim: int = 3, name: str = "stub") -> None:
        self.query: Vector = query or (lambda text: [len(text), 1.0, 0.0])
        self.passage: Vector = passage or self.query
        self.dim, self.name = dim, name
        self.calls: list[list[str]] = []
        self.counts: list[tuple[str, int]] = []

    def _encode(self, kind: str, vector: Vector, texts: Iterable[str]) -> np.ndarray:
        batch = list(texts)
        self.calls.append(batch)
        self.counts.append((kind, len(batch)))
        return np.array([vector(t) for t in batch], dtype="float32")

    def encode_queries(self, texts: Iterable[str]) -> np.ndarray:
        return self._encode("q", self.query, texts)

    def encode_passages(self, texts: Iterable[str]) -> np.ndarray:
        return self._encode("p", self.passage, texts)


def hashed_unit_vector(text: str, dim: int) -> np.ndarray:
    """A deterministic random unit vector seeded by a hash of ``text``."""
    seed = int(hashlib.sha1(text.encode()).hexdigest()[:8], 16)
    v = np.random.default_rng(seed).normal(size=dim).astype(np.float32)
    return v / np.linalg.norm(v)


def hashing_embedder(dim: int = 8, name: str = "fake/encoder") -> StubEmbedder:
    """Unit vectors from a hash of the e5-prefixed text (``query: ``/``passage: ``): distinct
    texts get unrelated vectors, a query and a passage of the same text different ones."""
    return StubEmbedder(lambda t: hashed_unit_vector("query: " + t, dim),
                        lambda t: hashed_unit_vector("passage: " + t, dim), dim=dim, name=name)
