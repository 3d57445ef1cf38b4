"""The verdict head: the four verdict labels from a claim and its question–answer evidence,
without an LLM.

A multinomial logistic regression over features of the *frozen* packaged encoder (the same
embedder matching uses, through its ONNX backend), so inference is numpy plus one embedding
batch: no torch, no second model. ``factsieve train-verdict`` fits it
and writes the artifact this module loads: ``verdict_head.npz`` (standardisation and weights)
with ``verdict_head.json`` beside it (encoder, feature version, training data, measured numbers).

Features (``FEATURE_VERSION``; :func:`pool_features` is the one place they are computed, for
training and inference alike), from the claim embedding ``c`` (query prefix) and one embedding
``e_i`` per pair of the text ``"question answer"`` (passage prefix), the first ``MAX_PAIRS``:

- ``c``, ``mean_i e_i``, the element-wise ``max_i e_i``, ``c ⊙ mean e`` and ``|c − mean e|``;
- cosine ``c·e_i``: mean, max, min; ``log(1 + n)`` pairs;
- lexical cues over the answers: the share that say "No answer could be found", that open with
  "yes", that open with "no", and that carry a negation or debunking word (English cues:
  AVeriTeC's Boolean answers start with Yes/No, and a frozen bi-encoder blurs polarity).

No pairs gives zero evidence vectors and statistics: the head then rates from the claim alone.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from plugin.artefacts import VERDICT, artefact_dir
from plugin.errors import ModelMismatch, ModelUnavailable
from plugin.verify.scoring import LABELS, MAX_EVIDENCE, NO_ANSWER

#: Bump when :func:`pool_features` changes: an artifact of another version is refused.
FEATURE_VERSION = "qa-pool-v1"
#: Pairs read per claim (the AVeriTeC task's evidence limit): later ones are ignored.
MAX_PAIRS = MAX_EVIDENCE
ARTIFACT = "verdict_head.npz"
MANIFEST = "verdict_head.json"
#: Texts per embedder call while featurising many claims.
EMBED_BATCH = 256

_YES = re.compile(r"^\W*yes\b", re.IGNORECASE)
_NO = re.compile(r"^\W*no\b", re.IGNORECASE)
_NEGATION = re.compile(r"\b(not|no|never|none|false|fake|hoax|myth|misleading|incorrect|untrue|"
                       r"inaccurate|wrong|debunked|fabricated|doctored|misquoted|baseless)\b|n't\b",
                       re.IGNORECASE)
N_CUES = 4
N_STATS = 4


def pair_text(pair: Mapping[str, Any]) -> str:
    """The text one pair is embedded as: ``"question answer"``, as the AVeriTeC scorer's Q+A."""
    return " ".join(f"{pair.get('question') or ''} {pair.get('answer') or ''}".split())


def answer_cues(pairs: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """Shares of the answers that are the no-answer marker, open with yes, open with no, and
    hold a negation or debunking word (``N_CUES`` values in [0, 1]; zeros without pairs)."""
    if not pairs:
        return np.zeros(N_CUES, dtype=np.float32)
    answers = [" ".join(str(p.get("answer") or "").split()) for p in pairs]
    found = [(a == NO_ANSWER, a != NO_ANSWER and bool(_YES.match(a)),
              a != NO_ANSWER and bool(_NO.match(a)), a != NO_ANSWER and bool(_NEGATION.search(a)))
             for a in answers]
    return np.asarray(found, dtype=np.float32).mean(axis=0)


def feature_dim(dim: int) -> int:
    return 5 * dim + N_STATS + N_CUES


def pool_features(c: np.ndarray, e: np.ndarray, cues: np.ndarray) -> np.ndarray:
    """One claim's feature vector from its embedding ``c`` (``dim``), its pairs' embeddings
    ``e`` (``n × dim``, L2-normalised, ``n`` may be 0) and :func:`answer_cues`."""
    dim = c.shape[0]
    if len(e):
        mean, peak = e.mean(axis=0), e.max(axis=0)
        cos = e @ c
        stats = [cos.mean(), cos.max(), cos.min(), np.log1p(len(e))]
    else:
        mean = peak = np.zeros(dim, dtype=np.float32)
        stats = [0.0, 0.0, 0.0, 0.0]
    return np.concatenate([c, mean, peak, c * mean, np.abs(c - mean),
                           np.asarray(stats, dtype=np.float32), cues]).astype(np.float32)


def featurize(embedder: Any, items: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
              batch: int = EMBED_BATCH) -> np.ndarray:
    """Features of many ``(claim, qa_pairs)`` at once (``len(items) × feature_dim``): claims and
    pair texts are embedded in batches of ``batch``, then pooled per claim."""
    pairs = [list(p)[:MAX_PAIRS] for _, p in items]
    claims = _encode(embedder.encode_queries, [c for c, _ in items], batch)
    texts = [pair_text(p) for ps in pairs for p in ps]
    flat = _encode(embedder.encode_passages, texts, batch) if texts else np.zeros((0, embedder.dim))
    out = np.zeros((len(items), feature_dim(embedder.dim)), dtype=np.float32)
    at = 0
    for i, ps in enumerate(pairs):
        out[i] = pool_features(claims[i], flat[at:at + len(ps)], answer_cues(ps))
        at += len(ps)
    return out


def _encode(fn: Any, texts: list[str], batch: int) -> np.ndarray:
    return np.concatenate([np.asarray(fn(texts[i:i + batch]), dtype=np.float32)
                           for i in range(0, len(texts), batch)])


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class SoftmaxModel:
    """Standardise, then ``softmax(x W + b)``: ``W`` is ``features × len(LABELS)``."""

    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: np.ndarray

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        return softmax(((x - self.mean) / self.scale) @ self.weights + self.bias)

    def save(self, path: Path) -> None:
        np.savez_compressed(path, mean=self.mean.astype(np.float32), scale=self.scale.astype(np.float32),
                            weights=self.weights.astype(np.float32), bias=self.bias.astype(np.float32))

    @classmethod
    def read(cls, path: Path) -> SoftmaxModel:
        with np.load(path) as z:
            return cls(mean=z["mean"], scale=z["scale"], weights=z["weights"], bias=z["bias"])


def packaged_path() -> Path:
    """The committed artifact's folder (``plugin/artefacts/verdict``)."""
    return artefact_dir(VERDICT)


def artifact_paths(path: Path | None) -> tuple[Path, Path]:
    """``(weights, manifest)`` for a folder holding both, the ``.npz`` itself, or ``None`` (the
    packaged artifact)."""
    path = packaged_path() if path is None else Path(path)
    if path.suffix == ".npz":
        return path, path.with_suffix(".json")
    return path / ARTIFACT, path / MANIFEST


class VerdictHead:
    """``label_scores(claim, qa_pairs)``: the four labels' probabilities (summing to 1)."""

    def __init__(self, model: SoftmaxModel, manifest: Mapping[str, Any], embedder: Any) -> None:
        self.model, self.manifest, self.embedder = model, dict(manifest), embedder

    @classmethod
    def load(cls, path: Path | None, embedder: Any) -> VerdictHead:
        """The artifact at ``path`` (the packaged one when ``None``), refused when it was
        trained on another encoder or feature version than ``embedder`` and this code give."""
        weights, manifest_path = artifact_paths(path)
        if not weights.is_file() or not manifest_path.is_file():
            raise ModelUnavailable(f"no verdict head at {str(weights)!r} (with {manifest_path.name}): "
                                   "run `factsieve train-verdict`")
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
            model = SoftmaxModel.read(weights)
        except (ValueError, KeyError, OSError) as exc:
            raise ModelUnavailable(f"cannot read the verdict head at {str(weights)!r}: {exc}; "
                                   "rebuild it with `factsieve train-verdict`") from exc
        check_manifest(manifest, model, embedder)
        return cls(model, manifest, embedder)

    def label_scores(self, claim: str, qa_pairs: list[dict[str, Any]],
                     date: str | None = None) -> dict[str, float]:
        return self.batch_scores([(claim, qa_pairs)], [date])[0]

    def batch_scores(self, items: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
                     dates: Sequence[str | None] | None = None) -> list[dict[str, float]]:
        """Label probabilities per ``(claim, qa_pairs)``. ``dates`` (the claims' ISO dates) is
        part of the verdict-model interface (``plugin.verify.verifier.VerdictHead``); this head
        does not read it."""
        if not items:
            return []
        probs = self.model.probabilities(featurize(self.embedder, items))
        return [{label: round(float(p), 4) for label, p in zip(LABELS, row)} for row in probs]


def check_manifest(manifest: Mapping[str, Any], model: SoftmaxModel, embedder: Any) -> None:
    encoder = manifest.get("encoder") or {}
    if encoder.get("name") != embedder.name or encoder.get("dim") != embedder.dim:
        raise ModelMismatch(f"the verdict head was trained on {encoder.get('name')!r} "
                            f"({encoder.get('dim')}-d); the configured embedder is {embedder.name!r} "
                            f"({embedder.dim}-d): retrain it with `factsieve train-verdict`")
    if manifest.get("feature_version") != FEATURE_VERSION:
        raise ModelMismatch(f"the verdict head has feature version {manifest.get('feature_version')!r}; "
                            f"this code computes {FEATURE_VERSION!r}: retrain it with "
                            "`factsieve train-verdict`")
    if list(manifest.get("labels") or []) != list(LABELS) or model.weights.shape != (
            feature_dim(embedder.dim), len(LABELS)):
        raise ModelMismatch(f"the verdict head's weights have shape {model.weights.shape} for labels "
                            f"{manifest.get('labels')}; expected ({feature_dim(embedder.dim)}, "
                            f"{len(LABELS)}) for {list(LABELS)}: retrain it with `factsieve train-verdict`")
