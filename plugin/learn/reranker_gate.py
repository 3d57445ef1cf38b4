"""The champion/challenger gate of a tenant's reranker (pure).

A retrained reranker (the challenger) replaces the one serving the tenant (the champion: the
packaged adapter until a challenger was promoted) only when it ranks better on a fixed
evaluation set and worse in no language: MAP@5 of the right fact-check among each evaluation
group's candidates as each model scores them (the tenant's held-out decided posts and the
packaged dev set, ``plugin.learn.reranker_data``), overall and per language.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: the challenger's overall MAP@5 must be at least the champion's plus this
MIN_GAIN = 0.005
#: ... and no language's MAP@5 may fall by more than this
MAX_LANGUAGE_DROP = 0.01


def average_precision_at_5(scores: Sequence[float]) -> float:
    """AP@5 of one group whose right candidate is ``scores[0]`` (one relevant: 1/rank within the
    top 5, else 0); ties count against it."""
    rank = 1 + sum(1 for s in scores[1:] if s >= scores[0])
    return 1.0 / rank if rank <= 5 else 0.0


def map_at_5(groups: Iterable[tuple[str, Sequence[float]]]) -> dict[str, Any]:
    """``{"MAP@5", "groups", "per_language": {lang: {"MAP@5", "groups"}}}`` of ``(language,
    scores with the right one first)`` groups."""
    per: dict[str, list[float]] = {}
    every: list[float] = []
    for lang, scores in groups:
        ap = average_precision_at_5(scores)
        every.append(ap)
        per.setdefault(lang or "und", []).append(ap)

    def mean(xs: list[float]) -> float:
        return round(sum(xs) / len(xs), 4) if xs else 0.0
    return {"MAP@5": mean(every), "groups": len(every),
            "per_language": {k: {"MAP@5": mean(v), "groups": len(v)} for k, v in sorted(per.items())}}


@dataclass(frozen=True)
class GateDecision:
    """The gate's word on a challenger reranker: promote it or keep the champion, and why
    (not a claim's ``plugin.models.Verdict``)."""

    promote: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"promote": self.promote, "reason": self.reason}


def decide(champion: Mapping[str, Any], challenger: Mapping[str, Any], *,
           min_gain: float = MIN_GAIN, max_language_drop: float = MAX_LANGUAGE_DROP) -> GateDecision:
    """Whether the challenger replaces the champion (two ``map_at_5`` results on the same groups)."""
    if not champion.get("groups"):
        return GateDecision(False, "no evaluation groups")
    gain = challenger["MAP@5"] - champion["MAP@5"]
    if gain < min_gain - 1e-12:
        return GateDecision(False, f"MAP@5 {challenger['MAP@5']} is not {min_gain} above the "
                              f"champion's {champion['MAP@5']}")
    for lang, c in champion["per_language"].items():
        new = challenger["per_language"].get(lang, {}).get("MAP@5", 0.0)
        if c["MAP@5"] - new > max_language_drop + 1e-12:
            return GateDecision(False, f"{lang} MAP@5 falls from {c['MAP@5']} to {new} (more than "
                                  f"{max_language_drop})")
    return GateDecision(True, f"MAP@5 {champion['MAP@5']} -> {challenger['MAP@5']}, no language "
                         f"down by more than {max_language_drop}")
