"""Check-worthiness: how likely a post states a claim worth checking, from the embedding the posts
index already stores (``PostMemory.vector``: the base model's query side over the normalised
post), through a logistic head (``plugin/artefacts/checkworthiness/<name>.json``: weights, bias,
decision threshold, and the manifest of how it was trained and measured). A post costs a dot
product on top of the embedding the post job computes anyway; no torch, no second model.
"""
from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from plugin.artefacts import CHECKWORTHINESS, artefact_dir
from plugin.errors import ModelMismatch

#: the committed head the post job serves
DEFAULT_HEAD = "ct24-e5small-logistic"


@dataclass(frozen=True)
class CheckWorthiness:
    """A logistic head: ``score(vector) = sigmoid(w · vector + b)``; a post is check-worthy at
    ``threshold`` or above (the F1-best threshold chosen out of fold when it was trained)."""

    weights: tuple[float, ...]
    bias: float
    threshold: float
    embedding_model: str
    manifest: dict[str, Any]

    def score(self, vector: Sequence[float]) -> float:
        if len(vector) != len(self.weights):
            raise ModelMismatch(f"the check-worthiness head takes {len(self.weights)}-dimensional vectors "
                                f"({self.embedding_model}), got {len(vector)}")
        z = self.bias + sum(w * x for w, x in zip(self.weights, vector))
        return 1.0 / (1.0 + math.exp(-z)) if z > -500 else 0.0

    def to_file(self) -> dict[str, Any]:
        return {"weights": list(self.weights), "bias": self.bias, "threshold": self.threshold,
                "embedding_model": self.embedding_model, **self.manifest}

    @classmethod
    def from_file(cls, data: dict[str, Any]) -> CheckWorthiness:
        manifest = {k: v for k, v in data.items() if k not in ("weights", "bias", "threshold", "embedding_model")}
        return cls(tuple(float(w) for w in data["weights"]), float(data["bias"]), float(data["threshold"]),
                   str(data["embedding_model"]), manifest)


def head_path(name: str = DEFAULT_HEAD) -> Path:
    return artefact_dir(CHECKWORTHINESS) / f"{name}.json"


@lru_cache(maxsize=4)
def load_head(path: str | None = None) -> CheckWorthiness | None:
    """The head at ``path`` (the committed default when ``None``); ``None`` when there is none."""
    p = Path(path) if path else head_path()
    if not p.is_file():
        return None
    return CheckWorthiness.from_file(json.loads(p.read_text(encoding="utf-8")))
