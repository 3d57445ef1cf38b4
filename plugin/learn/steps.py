"""``Learning``: the one place where what a tenant's desk taught changes a match result.

A match (``plugin.search.result.Match``) leaves the matcher the same for every tenant; the one
match path (``plugin.service.matching.match_post``) then passes it through ``Learning.adjust``
with the tenant and the post, and each step in turn may reorder, drop or add candidates and
change their confidence. The
steps run in the order given (``Services.learning`` builds them): memory first (it drops pairs
the desk rejected and puts pairs it confirmed first), then recalibration (the tenant's own
confidence), then the claim's answer (a fact-check the desk confirmed for the post's claim first). A step must be pure over what it reads and leave the result's shape alone.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from plugin.search.result import Match


class Step(Protocol):
    def apply(self, tenant: str, post: Mapping[str, Any], result: Match) -> Match:
        """``result`` as this tenant's learning changes it (a new match, or ``result`` untouched)."""


@dataclass(frozen=True)
class Learning:
    steps: Sequence[Step] = ()

    def adjust(self, tenant: str, post: Mapping[str, Any], result: Match) -> Match:
        """``result`` after every step, in order (no steps: ``result`` itself)."""
        for step in self.steps:
            result = step.apply(tenant, post, result)
        return result
