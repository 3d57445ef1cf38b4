"""``Learning``: the one place where what a tenant's desk taught changes a match result.

A match result (``MatchResult.to_dict()``) leaves the matcher the same for every tenant; the
post job and ``POST /v1/match`` then pass it through ``Learning.adjust`` with the tenant and the
post, and each step in turn may reorder, drop or add matches and change their confidence. The
steps run in the order given (``Services.learning`` builds them): memory first (it drops pairs
the desk rejected and puts pairs it confirmed first), then recalibration (the tenant's own
confidence). A step must be pure over what it reads and leave the result's shape alone.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class Step(Protocol):
    def apply(self, tenant: str, post: Mapping[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        """``result`` as this tenant's learning changes it (a new dict, or ``result`` untouched)."""


@dataclass(frozen=True)
class Learning:
    steps: Sequence[Step] = ()

    def adjust(self, tenant: str, post: Mapping[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        """``result`` after every step, in order (no steps: ``result`` itself)."""
        for step in self.steps:
            result = step.apply(tenant, post, result)
        return result
