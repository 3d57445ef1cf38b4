"""A tenant's own match confidence, refitted from its desk's decisions (pure).

The packaged confidence (``plugin.search.calibration``) was fitted on CLEF-2020: one newsroom's
posts, fact-checks and idea of "the right one" differ. Every decision records each shown
candidate's packaged confidence, so a refit needs no re-matching:

- **Labels** (``labelled``): a confirmed or manual fact-check is a positive; the other shown
  candidates of a confirmed post are negatives; a reject names its negative (all shown when it
  names none); "none of these" makes every shown candidate a negative. ``not_a_claim`` teaches
  no pair, undone decisions and their undos nothing, and decisions with origin ``auto`` are left
  out (they would teach the model its own guesses). A tipline user's "helped" / "did not help"
  (origin ``tipline``: ``public_feedback``) is fitted on at ``TIPLINE_WEIGHT`` a row, never held
  out nor counted toward the minimums: it is the only word on what a tipline answered alone.
- **Model** (``Recalibration``): Platt scaling on the packaged logit, ``p' = σ(a·logit(p) + b)``,
  one map for the top candidate and one for those below it (``PARTS``), each fitted as a maximum a posteriori estimate under a Gaussian prior centred on the identity
  (``a = 1, b = 0``) with precision ``PRIOR_STRENGTH``: with few decisions the likelihood is weak
  and the map stays near the packaged model; as decisions grow it follows them. A language with
  enough decisions (``MIN_LANG_ROWS``, ``MIN_LANG_SIDE``) gets its own map, shrunk toward the
  all-languages one; every other language uses that (``"*"``).
- **Held out** (``held_out``): a deterministic share of posts (by a hash of the post id), never
  fitted on; the expected calibration error before and after, and the auto-confirm tier
  (``plugin.learn.tier``), are measured there, so the numbers describe the stored model.

Too few decisions, or one-sided ones (all confirms, all rejects), are refused (``BadInput``)
instead of fitted: a map from one kind of answer is degenerate, not cautious.
"""
from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from plugin.errors import BadInput
from plugin.learn.tier import Tier, auto_tier
from plugin.review.model import Action, superseded
from plugin.review.records import Decision, Origin, ShownCandidate
from plugin.search.calibration import CEIL, FLOOR, expected_calibration_error

#: a refit needs at least this many decisions that teach (not auto, not not_a_claim, not undone)
MIN_DECISIONS = 50
#: ... of both kinds (confirms or manual matches; rejects or "none"), and at least this many
#: posts on each side at the top: where the top candidate was right, and where it was wrong
MIN_PER_SIDE = 10
#: a language gets its own map with at least this many labelled candidates in the fitted share,
#: and this many positives and negatives among them
MIN_LANG_ROWS, MIN_LANG_SIDE = 200, 20
#: precision of the Gaussian prior on ``(a − 1, b)``: about this many candidates' worth of belief
#: in the packaged model (or, for a language, in the all-languages map)
PRIOR_STRENGTH = 10.0
#: the share of posts held out, in percent (by ``held_out``)
HOLDOUT_PERCENT = 30
#: the parameters ``(a, b)`` of the identity map: the packaged confidence unchanged
IDENTITY = (1.0, 0.0)
#: what a tipline user's "helped" / "did not help" counts in a refit against a reviewer's 1: a
#: written-down choice, not a measurement (no decided tipline traffic to measure it on); the
#: public's are the tipline's only signal on posts it answered without a person, and less sure
TIPLINE_WEIGHT = 0.25
#: the fallback map's key, as in the packaged calibrator's isotonic maps
ALL = "*"


def logit(p: float) -> float:
    p = min(max(float(p), FLOOR), CEIL)
    return math.log(p / (1.0 - p))


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def held_out(post_id: str, percent: int = HOLDOUT_PERCENT) -> bool:
    """Whether a post is in the held-out share: the same answer in every run and process."""
    return int(hashlib.sha256(post_id.encode("utf-8")).hexdigest()[:8], 16) % 100 < percent


# -- labels ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Row:
    """One shown candidate with its label: what the refit learns from."""

    post_id: str
    lang: str
    confidence: float  # the packaged one
    label: int
    #: the first shown candidate
    top: bool
    #: how much the row counts in the fit: a person's 1, the public's ``TIPLINE_WEIGHT``
    weight: float = 1.0


def packaged_confidence(candidate: ShownCandidate) -> float | None:
    """The candidate's packaged confidence: ``confidence_packaged`` when a recalibration served
    it (``plugin.learn.calibration_step``), else ``confidence``."""
    value = candidate.confidence_packaged
    return candidate.confidence if value is None else value


def teaching(decisions: Iterable[Decision]) -> tuple[list[Decision], list[Decision], Counter[str]]:
    """The decisions a refit learns from, the standing not-a-claim ones (no pair, but the tier
    counts them: ``top_outcome``), and how many were left out and why."""
    decisions = list(decisions)
    dropped = superseded(decisions)
    left: Counter[str] = Counter()
    kept, claimless = [], []
    for d in decisions:
        if d.id in dropped:
            left["undone"] += 1
        elif d.origin is Origin.AUTO:
            left["auto"] += 1
        elif d.origin is Origin.TIPLINE:  # the public's, weighed apart: ``public_feedback``
            left["tipline"] += 1
        elif d.action is Action.NOT_A_CLAIM:
            left["not_a_claim"] += 1
            claimless.append(d)
        elif d.action is Action.UNDO:
            left["undo"] += 1
        else:
            kept.append(d)
    return kept, claimless, left


def public_feedback(decisions: Iterable[Decision]) -> list[Decision]:
    """The tipline users' decisions a refit also learns from, at ``TIPLINE_WEIGHT``."""
    return [d for d in decisions if d.origin is Origin.TIPLINE and d.action in (Action.CONFIRM, Action.REJECT)]


def labelled(decision: Decision) -> list[Row]:
    """The labelled shown candidates of one teaching decision (module docstring); candidates
    without a packaged confidence (a configuration without a confidence model) teach nothing."""
    action, fc = decision.action, decision.factcheck_id
    cands = decision.candidates or ()
    if action in (Action.CONFIRM, Action.MANUAL) and fc:
        labels = {c.factcheck_id: int(c.factcheck_id == fc) for c in cands}
    elif action is Action.REJECT and fc:
        labels = {fc: 0}
    elif action in (Action.REJECT, Action.NONE):
        labels = {c.factcheck_id: 0 for c in cands}
    else:
        return []
    first = min(range(len(cands)), key=lambda i: cands[i].rank or i + 1) if cands else -1
    rows = []
    for i, c in enumerate(cands):
        p = packaged_confidence(c)
        if c.factcheck_id in labels and p is not None:
            rows.append(Row(decision.post_id, decision.post_lang or "", float(p), labels[c.factcheck_id], i == first,
                            TIPLINE_WEIGHT if decision.origin is Origin.TIPLINE else 1.0))
    return rows


def top_outcome(decision: Decision) -> tuple[float, int, str] | None:
    """``(packaged confidence, right, post language)`` of the decision's top candidate, for the tier: right when
    the reviewer confirmed it; wrong when they confirmed another, matched one manually, rejected
    all, found none or said the post makes no claim (auto-confirming it would be an error). A
    reject of another candidate says nothing about the top one: ``None``."""
    scored = [(c, p) for c in decision.candidates or () if (p := packaged_confidence(c)) is not None]
    if not scored:
        return None
    top, p = min(scored, key=lambda cp: cp[0].rank or 10**6)  # as ``labelled`` picks it
    action, fc = decision.action, decision.factcheck_id
    if action is Action.REJECT and fc and fc != top.factcheck_id:
        return None
    return float(p), int(action is Action.CONFIRM and fc == top.factcheck_id), decision.post_lang or ""


# -- the model ---------------------------------------------------------------------------------------
def fit_platt(x: Sequence[float], y: Sequence[int], prior: tuple[float, float] = IDENTITY,
              strength: float = PRIOR_STRENGTH, iters: int = 50,
              weights: Sequence[float] | None = None) -> tuple[float, float]:
    """``(a, b)`` maximising Σ weight · log-likelihood of ``y`` under ``σ(a·x + b)`` minus
    ``strength/2 · ‖(a, b) − prior‖²``, by Newton steps (the objective is strictly concave)."""
    import numpy as np

    xs = np.column_stack([np.asarray(x, dtype="float64"), np.ones(len(x))])
    ys = np.asarray(y, dtype="float64")
    ws = np.ones(len(x)) if weights is None else np.asarray(weights, dtype="float64")
    centre = np.asarray(prior, dtype="float64")
    w = centre.copy()
    for _ in range(iters):
        p = 0.5 * (1.0 + np.tanh(0.5 * (xs @ w)))
        grad = xs.T @ (ws * (p - ys)) + strength * (w - centre)
        hess = (xs * (ws * p * (1.0 - p))[:, None]).T @ xs + strength * np.eye(2)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-9:
            break
    return float(w[0]), float(w[1])


#: a map's two parts: for the top candidate (the first shown), and for the ones below it. A
#: reviewer confirms at most one candidate, so at the same packaged confidence the top one and
#: those below it are right at different rates.
PARTS = ("top", "rest")


@dataclass(frozen=True)
class Recalibration:
    """A tenant's map from the packaged confidence to its own, ``p' = σ(a·logit(p) + b)``:
    ``{lang or "*": {"top": (a, b), "rest": (a, b)}}``."""

    params: Mapping[str, Mapping[str, tuple[float, float]]]

    def predict(self, confidence: float, lang: str | None, top: bool) -> float:
        """The tenant's confidence for a packaged one, kept inside the packaged range."""
        a, b = self.params.get(lang or "", self.params[ALL])["top" if top else "rest"]
        return min(max(sigmoid(a * logit(confidence) + b), FLOOR), CEIL)

    def to_dict(self) -> dict[str, dict[str, dict[str, float]]]:
        return {k: {part: {"a": round(a, 6), "b": round(b, 6)} for part, (a, b) in maps.items()}
                for k, maps in sorted(self.params.items())}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Mapping[str, Mapping[str, float]]]) -> Recalibration:
        if ALL not in raw:
            raise ValueError(f"a recalibration needs its {ALL!r} map; it has {sorted(raw)}")
        return cls({k: {part: (float(maps[part]["a"]), float(maps[part]["b"])) for part in PARTS}
                    for k, maps in raw.items()})


def fit_maps(rows: Sequence[Row], prior: Mapping[str, tuple[float, float]] | None = None
             ) -> dict[str, tuple[float, float]]:
    """Both parts of a map from ``rows``, each shrunk toward ``prior``'s (the identity)."""
    out = {}
    for part in PARTS:
        mine = [r for r in rows if r.top == (part == "top")]
        out[part] = fit_platt([logit(r.confidence) for r in mine], [r.label for r in mine],
                              prior[part] if prior else IDENTITY,
                              weights=[r.weight for r in mine]) if mine else (prior or {}).get(part, IDENTITY)
    return out


def fit_recalibration(rows: Sequence[Row]) -> tuple[Recalibration, dict[str, dict[str, Any]]]:
    """The all-languages map shrunk toward the identity, and one per language with enough rows
    shrunk toward it; with what each language had (``per_language``)."""
    overall = fit_maps(rows)
    params = {ALL: overall}
    per_language: dict[str, dict[str, Any]] = {}
    for lang in sorted({r.lang for r in rows}):
        mine = [r for r in rows if r.lang == lang]
        pos = sum(r.label for r in mine)
        own = bool(lang) and len(mine) >= MIN_LANG_ROWS and min(pos, len(mine) - pos) >= MIN_LANG_SIDE
        if own:
            params[lang] = fit_maps(mine, overall)
        per_language[lang or "unknown"] = {"rows": len(mine), "positives": pos, "own_map": own}
    return Recalibration(params), per_language


# -- a refit, whole ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fit:
    recalibration: Recalibration
    tier: Tier
    counts: dict[str, int]
    per_language: dict[str, dict[str, Any]]
    ece: dict[str, float] = field(default_factory=dict)
    #: the packaged calibrator the decisions' confidences came from (``versions.calibrator``)
    calibrator: str = ""
    #: the time of the newest decision fitted on: "new decisions" are those after it
    decisions_until: str | None = None


def decision_calibrator(decision: Decision) -> str | None:
    """The packaged calibrator the decision's confidences came from (``versions.calibrator``)."""
    name = decision.versions.get("calibrator")
    return name if isinstance(name, str) else None


def fit_tenant(decisions: Iterable[Decision], tenant: str = "") -> Fit:
    """Refit a tenant's confidence from its decision log (module docstring); ``BadInput`` naming
    what is missing when the decisions are too few or one-sided."""
    decisions = list(decisions)
    kept, claimless, left = teaching(decisions)
    named = Counter(decision_calibrator(d) for d in kept)
    named.pop(None, None)
    who = f"tenant {tenant!r}" if tenant else "the tenant"
    if not named:
        raise BadInput(f"{who} has no decisions on calibrated matches to recalibrate from "
                       f"({len(kept)} teaching decisions; a configuration without a confidence "
                       f"model records none)")
    calibrator = named.most_common(1)[0][0]
    kept = [d for d in kept if decision_calibrator(d) == calibrator]
    claimless = [d for d in claimless if decision_calibrator(d) == calibrator]
    confirms = sum(d.action in (Action.CONFIRM, Action.MANUAL) for d in kept)
    rejects = len(kept) - confirms
    if len(kept) < MIN_DECISIONS:
        raise BadInput(f"{who} has {len(kept)} decisions to recalibrate from; at least "
                       f"{MIN_DECISIONS} are needed (auto, not-a-claim and undone decisions do not "
                       f"count)")
    if min(confirms, rejects) == 0:
        raise BadInput(f"{who}'s decisions are one-sided ({confirms} confirms, {rejects} rejects or "
                       f"none-of-these); both kinds are needed to recalibrate instead of learning a "
                       f"degenerate model")
    outcomes = [t[1] for d in kept if (t := top_outcome(d)) is not None]
    right, wrong = sum(outcomes), len(outcomes) - sum(outcomes)
    if min(right, wrong) < MIN_PER_SIDE:
        raise BadInput(f"{who}'s decisions are one-sided at the top: the top candidate was right in "
                       f"{right} posts and wrong in {wrong}; at least {MIN_PER_SIDE} of each are "
                       f"needed to recalibrate instead of learning a degenerate model")
    public = [d for d in public_feedback(decisions) if decision_calibrator(d) == calibrator]
    # the public's feedback is fitted on (weighed below the desk's), never held out to measure by
    fitted = [r for d in kept + public if not held_out(d.post_id) for r in labelled(d)]
    test_decisions = [d for d in kept if held_out(d.post_id)]
    test = [r for d in test_decisions for r in labelled(d)]
    if not fitted or len({r.label for r in fitted}) < 2:
        raise BadInput(f"{who}'s decisions outside the held-out share have only one kind of label; "
                       f"more decisions are needed")
    model, per_language = fit_recalibration(fitted)
    tops = [t for d in test_decisions if (t := top_outcome(d)) is not None]
    claimless_tops = [t for d in claimless if held_out(d.post_id) and (t := top_outcome(d)) is not None]
    tier = auto_tier([model.predict(p, lang, True) for p, _, lang in tops + claimless_tops],
                     [y for _, y, _ in tops + claimless_tops])
    before = [r.confidence for r in test]
    after = [model.predict(r.confidence, r.lang, r.top) for r in test]
    labels = [r.label for r in test]
    ece = {"before": round(expected_calibration_error(before, labels), 4),
           "after": round(expected_calibration_error(after, labels), 4),
           "at_1_before": round(expected_calibration_error([p for p, _, _ in tops], [y for _, y, _ in tops]), 4),
           "at_1_after": round(expected_calibration_error([model.predict(p, lang, True) for p, _, lang in tops],
                                                          [y for _, y, _ in tops]), 4)}
    counts = {"decisions": len(kept), "confirms": confirms, "rejects": rejects,
              "rows": len(fitted) + len(test), "positives": sum(r.label for r in fitted + test),
              "fitted_rows": len(fitted), "held_out_decisions": len(test_decisions),
              "held_out_rows": len(test), "left_out_auto": left["auto"],
              "left_out_not_a_claim": left["not_a_claim"], "left_out_undone": left["undone"],
              "tipline_decisions": len(public)}
    until = max((d.at for d in kept), default=None)
    return Fit(model, tier, counts, per_language, ece, calibrator, until)
