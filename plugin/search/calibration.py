"""Calibrated confidence: the probability that a match addresses the post.

A fused RRF score (0.0476 …) says how a fact-check ranked, not how likely it is to be the
right one: a newsroom cannot put a threshold on it. ``Calibrator`` maps what the matcher knows
about a match to a probability, in two steps fitted on labelled matches (``factsieve calibrate``,
the training split only):

1. a logistic regression over ``FEATURES`` (fused rank, kNN similarity, BM25 rank, the kNN
   margin over the best other candidate, same language as the post), standardised;
2. isotonic regression (pool-adjacent-violators) of the labels on that logit, per language
   where the training data has enough matches in it, else over all languages: the probability
   then rises with the logit and agrees with the observed rate in every stretch of it.

The labelled matches come from each training post run twice, with its fact-check in the index
and with it left out of every sub-query (``factsieve calibrate``), so the probability is
one for a world where half the posts have been fact-checked before, not one where all have.
Expected calibration error (``expected_calibration_error``) is what ``evaluate`` reports.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from plugin.artefacts import CALIBRATION, artefact_path
from plugin.models import Fused

#: what a match's confidence is computed from; not the fused score itself, whose scale moves
#: with the mode's weights (mono 0.5 / 0.5, auto 0.3 / 0.7): its rank carries the fused order
FEATURES = ("inv_rank", "dense_sim", "bm25_inv_rank", "dense_margin", "same_lang")
#: a language gets its own isotonic map with at least this many labelled matches and positives
MIN_MATCHES, MIN_POSITIVES = 300, 30
#: confidences stay inside this range: a finite sample never proves 0 or 1
FLOOR, CEIL = 0.001, 0.999


def _dense(f: Fused) -> float:
    return max((h.score for q, h in f.contributions.items() if q.startswith("dense:")), default=0.0)


def _bm25_inv_rank(f: Fused) -> float:
    return max((1.0 / h.rank for q, h in f.contributions.items() if q.startswith("bm25:")), default=0.0)


def candidate_features(candidates: Sequence[Fused], shown: Sequence[Fused], lang: str | None) -> np.ndarray:
    """One row of ``FEATURES`` per ``shown`` match (pure). ``candidates``: every fused candidate,
    for the margin (a match's kNN similarity minus the best other candidate's), so that the
    features do not depend on how many matches were asked for."""
    dense = sorted(((_dense(f), f.id) for f in candidates), reverse=True)
    best, second = (dense + [(0.0, ""), (0.0, "")])[:2]
    rows = []
    for f in shown:
        sim = _dense(f)
        other = second[0] if f.id == best[1] else best[0]
        src = f.source or {}
        rows.append([1.0 / max(f.rank, 1), sim, _bm25_inv_rank(f), sim - other,
                     float(bool(lang) and src.get("lang") == lang)])
    return np.asarray(rows, dtype="float64").reshape(len(rows), len(FEATURES))


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-2, iters: int = 50) -> np.ndarray:
    """Weights (intercept first) of an L2-regularised logistic regression, by Newton steps."""
    xb = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(xb.shape[1])
    reg = np.full(xb.shape[1], l2)
    reg[0] = 0.0
    for _ in range(iters):
        p = _sigmoid(xb @ w)
        grad = xb.T @ (p - y) + reg * w
        hess = (xb * (p * (1 - p))[:, None]).T @ xb + np.diag(reg) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return w


def fit_isotonic(z: np.ndarray, y: np.ndarray) -> tuple[list[float], list[float]]:
    """Breakpoints ``(xs, ys)`` of the non-decreasing step fit of ``y`` on ``z`` (pool adjacent
    violators), for ``np.interp`` between them."""
    order = np.argsort(z, kind="stable")
    zs, ys = z[order], y[order].astype("float64")
    blocks: list[list[float]] = []  # [sum_y, n, z_min, z_max]
    for zi, yi in zip(zs, ys):
        blocks.append([yi, 1.0, zi, zi])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] >= blocks[-1][0] / blocks[-1][1]:
            s, n, lo, hi = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += n
            blocks[-1][3] = hi
    xs, vs = [], []
    for s, n, lo, hi in blocks:
        v = s / n
        xs.extend([lo, hi] if hi > lo else [lo])
        vs.extend([v, v] if hi > lo else [v])
    return [round(float(x), 5) for x in xs], [round(float(v), 5) for v in vs]


@dataclass(frozen=True)
class Calibrator:
    """A fitted confidence model for one retrieval configuration (JSON: ``to_dict``)."""

    config: str
    mean: list[float]
    std: list[float]
    weights: list[float]
    #: language → isotonic breakpoints ``{"x": [...], "y": [...]}``; ``"*"`` for every other
    isotonic: dict[str, dict[str, list[float]]]
    trained_on: dict[str, Any] = field(default_factory=dict)

    def logit(self, x: np.ndarray) -> np.ndarray:
        z = (np.asarray(x, dtype="float64") - np.asarray(self.mean)) / np.asarray(self.std)
        return self.weights[0] + z @ np.asarray(self.weights[1:])

    def predict(self, x: np.ndarray, lang: str | None) -> np.ndarray:
        """The probability that each row's match addresses the post."""
        curve = self.isotonic.get(lang or "", self.isotonic["*"])
        p = np.interp(self.logit(x), curve["x"], curve["y"])
        return np.clip(p, FLOOR, CEIL)

    def to_dict(self) -> dict[str, Any]:
        return {"config": self.config, "features": list(FEATURES), "mean": self.mean, "std": self.std,
                "weights": self.weights, "isotonic": self.isotonic, "trained_on": self.trained_on}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Calibrator:
        if list(raw.get("features", [])) != list(FEATURES):
            raise ValueError(f"calibrator features {raw.get('features')} are not {list(FEATURES)}")
        return cls(config=raw["config"], mean=raw["mean"], std=raw["std"], weights=raw["weights"],
                   isotonic=raw["isotonic"], trained_on=raw.get("trained_on", {}))


def fit_calibrator(config: str, x: np.ndarray, y: np.ndarray, langs: Sequence[str],
                   trained_on: dict[str, Any] | None = None) -> Calibrator:
    """Logistic regression over all matches, then an isotonic map per language with enough
    matches (``MIN_MATCHES``, ``MIN_POSITIVES``) and one over all of them (``"*"``)."""
    x = np.asarray(x, dtype="float64")
    y = np.asarray(y, dtype="float64")
    mean = x.mean(axis=0)
    std = x.std(axis=0)
    std[std == 0] = 1.0
    w = fit_logistic((x - mean) / std, y)
    cal = Calibrator(config=config, mean=[float(v) for v in mean], std=[float(v) for v in std],
                     weights=[float(v) for v in w], isotonic={}, trained_on=trained_on or {})
    z = cal.logit(x)
    langs_a = np.asarray(langs)
    isotonic = {"*": dict(zip(("x", "y"), fit_isotonic(z, y)))}
    for lang in sorted(set(langs)):
        mask = langs_a == lang
        if mask.sum() >= MIN_MATCHES and y[mask].sum() >= MIN_POSITIVES:
            isotonic[lang] = dict(zip(("x", "y"), fit_isotonic(z[mask], y[mask])))
    return Calibrator(config=cal.config, mean=cal.mean, std=cal.std, weights=cal.weights,
                      isotonic=isotonic, trained_on=cal.trained_on)


def with_language_maps(cal: Calibrator, x: np.ndarray, y: np.ndarray, langs: Sequence[str],
                       source: dict[str, Any]) -> tuple[Calibrator, list[str]]:
    """``cal`` with an isotonic map of its own logit for every language of these labelled
    matches that has enough of them (``MIN_MATCHES``, ``MIN_POSITIVES``), fitted on them alone;
    the logistic part and the other maps unchanged (pure). A language the calibrator's own
    training data did not have (Arabic tweets beside English ones) gets a curve of its own,
    without refitting what English was fitted on. Returns the calibrator and the languages
    mapped; ``trained_on["languages"]`` says where each map came from (``source``)."""
    x = np.asarray(x, dtype="float64")
    y = np.asarray(y, dtype="float64")
    langs_a = np.asarray(langs)
    z = cal.logit(x) if len(y) else np.zeros(0)
    isotonic, mapped = dict(cal.isotonic), []
    for lang in sorted(set(langs)):
        mask = langs_a == lang
        if lang in ("", "?", "*") or mask.sum() < MIN_MATCHES or y[mask].sum() < MIN_POSITIVES:
            continue
        isotonic[lang] = dict(zip(("x", "y"), fit_isotonic(z[mask], y[mask])))
        mapped.append(lang)
    maps = {**cal.trained_on.get("languages", {}),
            **{lang: {**source, "matches": int((langs_a == lang).sum())} for lang in mapped}}
    return Calibrator(config=cal.config, mean=cal.mean, std=cal.std, weights=cal.weights, isotonic=isotonic,
                      trained_on={**cal.trained_on, "languages": maps}), mapped


def expected_calibration_error(probs: Sequence[float], labels: Sequence[float], bins: int = 10) -> float:
    """ECE: Σ_b (n_b / N) · |mean label_b − mean confidence_b| over ``bins`` equal-width bins."""
    p = np.asarray(probs, dtype="float64")
    y = np.asarray(labels, dtype="float64")
    if len(p) == 0:
        return 0.0
    idx = np.minimum((p * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        m = idx == b
        if m.any():
            total += m.sum() / len(p) * abs(y[m].mean() - p[m].mean())
    return float(total)


def calibrator_path(config: str) -> Path:
    """Where the packaged calibrator of ``config`` lives (``plugin/artefacts/calibration/``)."""
    return artefact_path(CALIBRATION, config)


def load_calibrator(config: str, path: Path | None = None) -> Calibrator | None:
    """The packaged (or given) calibrator of ``config``; ``None`` when it has none."""
    p = path or calibrator_path(config)
    if not p.is_file():
        return None
    return Calibrator.from_dict(json.loads(p.read_text(encoding="utf-8")))
