"""Choosing a score threshold from labelled scores: operating points, the lowest threshold that
reaches a precision, and the value to write in a configuration (pure functions)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from plugin.lab.evaluate.metrics import percentile

#: quantiles of all scores at which the precision/recall curve is reported
CURVE_QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9, 0.95)


def operating_point(pos_scores: Sequence[float], neg_scores: Sequence[float], threshold: float,
                    *, n_positive: int | None = None) -> dict[str, Any]:
    """Answer every case scoring ≥ ``threshold``: precision = right answers among all answers
    (a negative answered is an error), recall = right answers among ``n_positive`` (default: the
    positives given). Precision is 1.0 when nothing is answered (no answer, no error)."""
    tp = sum(1 for s in pos_scores if s >= threshold)
    fp = sum(1 for s in neg_scores if s >= threshold)
    total = len(pos_scores) if n_positive is None else n_positive
    return {"threshold": threshold, "answered": tp + fp, "correct": tp, "wrong": fp,
            "precision": tp / (tp + fp) if tp + fp else 1.0,
            "recall": tp / total if total else 0.0}


def choose_threshold(pos_scores: Sequence[float], neg_scores: Sequence[float], *,
                     min_precision: float = 0.95, n_positive: int | None = None,
                     quantiles: Sequence[float] = CURVE_QUANTILES) -> dict[str, Any]:
    """The lowest threshold whose precision is at least ``min_precision``.

    Candidates are the observed scores (between two of them the answered set does not change),
    so the threshold is always a score that occurred. Precision is not monotone in the threshold;
    the lowest qualifying one is taken as asked, and the curve shows what lies above it. Returns
    ``threshold`` (``None`` when no observed score qualifies) with its ``precision``, ``recall``
    and counts, and ``curve``: the operating points at the given quantiles of all scores.
    """
    if not 0.0 < min_precision <= 1.0:
        raise ValueError(f"min_precision must be in (0, 1], got {min_precision}")
    pooled = sorted({*pos_scores, *neg_scores})
    chosen: dict[str, Any] | None = None
    for t in pooled:
        point = operating_point(pos_scores, neg_scores, t, n_positive=n_positive)
        if point["correct"] and point["precision"] >= min_precision:
            chosen = point
            break
    every = [*pos_scores, *neg_scores]
    curve = [{"quantile": q, **operating_point(pos_scores, neg_scores, percentile(every, q),
                                               n_positive=n_positive)}
             for q in quantiles] if every else []
    base = chosen or {"threshold": None, "answered": 0, "correct": 0, "wrong": 0,
                      "precision": None, "recall": 0.0}
    return {**base, "min_precision": min_precision, "n_positive": len(pos_scores),
            "n_negative": len(neg_scores), "curve": curve}


def config_threshold(pos_scores: Sequence[float], neg_scores: Sequence[float], threshold: float, *,
                     min_precision: float, n_positive: int | None = None, digits: int = 4) -> float:
    """The value to write in the configuration: the lowest number of ``digits`` decimals, from
    ``threshold`` rounded down, whose operating point still reaches ``min_precision`` (rounding
    the measured threshold up would drop the positive it sits on; down may let a negative in)."""
    scale = 10 ** digits
    step = math.floor(round(threshold * scale, 9))
    top = max([*pos_scores, *neg_scores, threshold])
    while step / scale <= top:
        point = operating_point(pos_scores, neg_scores, step / scale, n_positive=n_positive)
        if point["correct"] and point["precision"] >= min_precision:
            return step / scale
        step += 1
    return math.ceil(round(threshold * scale, 9)) / scale


def distribution(scores: Sequence[float]) -> dict[str, Any]:
    """n, p10 / p50 / p90 (nearest rank), min and max of ``scores``."""
    if not scores:
        return {"n": 0}
    return {"n": len(scores), "p10": percentile(scores, 0.1), "p50": percentile(scores, 0.5),
            "p90": percentile(scores, 0.9), "min": min(scores), "max": max(scores)}
