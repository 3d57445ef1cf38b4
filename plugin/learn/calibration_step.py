"""The tenant's own confidence on its matches (a ``plugin.learn.steps`` step), and auto-confirm.

``Recalibration.apply`` replaces each match's ``confidence`` by the tenant's recalibrated one
(``plugin.learn.calibrate``; the map of the post's language, else the all-languages one; the
first match counts as the top candidate) and keeps
the packaged one beside it as ``confidence_packaged``: the review item and its decisions record
both, so the next refit learns from the packaged confidence, never from its own output. A tenant
without a recalibration, a match without a confidence, a result from another packaged calibrator
than the one the map was fitted on, and a match the memory step confirmed from the desk
(``reason: confirmed-by-desk``, whose confidence is the desk's word) are left as they are.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from plugin.errors import DecisionConflict, NotFound
from plugin.review.records import Decision
from plugin.search.result import Match
from plugin.models import CONFIRMED_BY_DESK

if TYPE_CHECKING:
    from plugin.learn.calibration_store import Recalibrations
    from plugin.review.desk import ReviewDesk
    from plugin.review.rules import Rules

log = logging.getLogger(__name__)

#: the actor auto-confirmed decisions are recorded under (origin ``auto``)
AUTO_ACTOR = "factsieve-auto"


def calibrator_of(config: str | None) -> str | None:
    """The packaged calibrator a result's configuration uses (as ``versions_of`` names it)."""
    if not config:
        return None
    from plugin.search.retrieval import retrieval_config

    try:
        cfg = retrieval_config(config)
    except Exception:  # a configuration this process does not know: nothing to map
        return None
    return cfg.calibrator or cfg.name


class Recalibration:
    """The recalibration step over the tenants' stored maps."""

    def __init__(self, recalibrations: Recalibrations) -> None:
        self.recalibrations = recalibrations

    def apply(self, tenant: str, post: Mapping[str, Any], result: Match) -> Match:
        from plugin.learn.calibration_store import packaged_sha256

        found = self.recalibrations.model(tenant)
        if found is None or not result.candidates:
            return result
        model, record = found
        name = calibrator_of(result.config)
        sits_on = record.get("calibrator") or {}
        if name is None or sits_on.get("name") != name or sits_on.get("sha256") != packaged_sha256(name):
            return result
        out = []
        for i, c in enumerate(result.candidates):
            if c.confidence is None or c.reason == CONFIRMED_BY_DESK:
                out.append(c)
                continue
            packaged = c.confidence if c.confidence_packaged is None else c.confidence_packaged
            out.append(replace(c, confidence=round(model.predict(packaged, result.lang, i == 0), 4),
                               confidence_packaged=packaged))
        changed = any(c is not old for c, old in zip(out, result.candidates))
        return replace(result, candidates=tuple(out)) if changed else result


def auto_confirm(desk: ReviewDesk, rules: Rules, recalibrations: Recalibrations,
                 tenant: str, post_id: str, result: Match) -> Decision | None:
    """Confirm the post's top match on ``desk`` without a person when the tenant opted in
    (``rules``: ``TenantRules.auto_confirm``), has an auto-confirm tier (its record in
    ``recalibrations``), and the top match's (recalibrated) confidence reaches it: a decision
    with origin ``auto`` (its ``match.confirmed`` says ``"auto": true``), shown in the desk's
    history and undone like any other. Returns the decision, or ``None``. Idempotent: an item
    already decided (a job run twice, or a reviewer first) or never queued is left alone."""
    top = result.best
    if top is None or not rules.for_tenant(tenant).auto_confirm:
        return None
    record = recalibrations.get(tenant)
    threshold = ((record or {}).get("tier") or {}).get("threshold")
    if threshold is None or top.confidence is None or top.confidence < threshold:
        return None
    if top.confidence_packaged is None:  # not served by this tenant's map
        return None
    try:
        (decision,) = desk.decide(tenant, AUTO_ACTOR, [
            {"post_id": post_id, "action": "confirm", "factcheck_id": top.id}], origin="auto")
    except (DecisionConflict, NotFound) as exc:
        log.info("post %s of tenant %s not auto-confirmed: %s", post_id, tenant, exc.detail)
        return None
    return decision
