"""A synthetic decision log whose true confidence is known: for the recalibration's tests and its
benchmark (``scripts/recalibration_bench.py``), not for serving.

Each post shows ``shown`` candidates with packaged confidences; candidate k is right with the
tenant's true probability ``σ(a·logit(p_k) + b)`` (``TRUE_MAP``: the packaged model is
overconfident in the middle for this newsroom), and the reviewer confirms the first right one in
rank order, or answers "none of these" (half of them "reject") when none is; a few posts are
"not a claim". Deterministic for a seed.
"""
from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from plugin.learn.calibrate import decision_calibrator, logit, sigmoid
from plugin.review.records import Decision
from plugin.search.result import Match

if TYPE_CHECKING:
    from plugin.review.desk import ReviewDesk

#: the synthetic tenant's true map from the packaged confidence: ``(a, b)``
TRUE_MAP = (1.6, -0.9)


def synthetic_decisions(n: int, *, seed: int = 0, tenant: str = "t", langs: tuple[str, ...] = ("en", "es"),
                        true_map: tuple[float, float] = TRUE_MAP, shown: int = 5,
                        calibrator: str = "factsieve", not_a_claim: float = 0.03,
                        only: str | None = None) -> list[Decision]:
    """``n`` decisions as they are read from the decision log (``Decision.from_source`` of the
    documents it stores, ``plugin.review.model``). ``only="confirm"`` or ``"none"``: a one-sided
    log, for the refusal."""
    rng = random.Random(seed)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    out = []
    for i in range(n):
        top = rng.betavariate(2.0, 1.6)
        confs = sorted([top] + [top * rng.uniform(0.2, 0.95) for _ in range(shown - 1)], reverse=True)
        cands = [{"factcheck_id": f"fc-{i}-{k}", "rank": k + 1, "score": round(0.05 / (k + 1), 4),
                  "confidence": round(min(max(c, 0.001), 0.999), 4), "signals": {}}
                 for k, c in enumerate(confs)]
        right = next((c for c in cands
                      if rng.random() < sigmoid(true_map[0] * logit(c["confidence"]) + true_map[1])), None)
        if only == "confirm":
            right = right or cands[0]
        elif only == "none":
            right = None
        roll = rng.random()
        if only is None and roll < not_a_claim:
            action, fc = "not_a_claim", None
        elif right is not None:
            action, fc = "confirm", right["factcheck_id"]
        else:
            action, fc = ("none" if roll < 0.5 else "reject"), None
        out.append(Decision.from_source({
            "id": f"dec-{seed}-{i}", "tenant": tenant, "post_id": f"post-{seed}-{i}",
            "post_lang": langs[i % len(langs)], "action": action, "factcheck_id": fc,
            "origin": "desk", "actor": "ana", "supersedes": None,
            "at": (start + timedelta(minutes=i)).isoformat(timespec="milliseconds"),
            "versions": {"calibrator": calibrator}, "candidates": cands}))
    return out


def record_through_desk(desk: ReviewDesk, tenant: str, decisions: list[Decision], actor: str = "ana") -> None:
    """``decisions`` made real on ``desk``: a review item for each post with its synthetic
    candidates, then the decisions on them (as the API's JSON), in lists of 200."""
    for d in decisions:
        matches = [{"id": c.factcheck_id, "rank": c.rank, "score": c.score, "confidence": c.confidence}
                   for c in d.candidates or ()]
        calibrator = decision_calibrator(d)
        desk.record_item(tenant, d.post_id, "a post", d.post_lang, None, None,
                         Match.from_dict({"matches": matches, "config": calibrator, "reranked": False},
                                         {"retrieval_config": calibrator, "calibrator": calibrator}))
    wanted: list[object] = [{"post_id": d.post_id, "action": d.action.value,
                             **({"factcheck_id": d.factcheck_id} if d.factcheck_id else {})}
                            for d in decisions]
    for start in range(0, len(wanted), 200):
        desk.decide(tenant, actor, wanted[start:start + 200], origin="desk")
