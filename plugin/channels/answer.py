"""What a tipline answers: the one place that decides whether FactSieve replies without a person
(pure).

A message is matched exactly as a post is (the one match path, the tenant's learning applied).
**Sure**: the best match's calibrated confidence is at least the threshold (the tenant's
auto-confirm tier, a channel's own, or ``tipline.json``'s default): the reply lists the matches at
or above it, best first, at most ``max_results``; a match the desk answered (confirmed for the
post or a re-post of it, or for its claim: ``plugin.models.DESK_ANSWERED``) is sure whatever its
confidence, and is the answer. **Not sure** (below it, or no match, or a configuration without a
confidence model): the desk looks into it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from plugin.models import DESK_ANSWERED
from plugin.search.result import Candidate, Match

RULE_FILE = Path(__file__).with_name("tipline.json")


@dataclass(frozen=True)
class TiplineRule:
    threshold: float
    max_results: int = 3


@lru_cache(maxsize=1)
def default_rule() -> TiplineRule:
    data = json.loads(RULE_FILE.read_text(encoding="utf-8"))
    return TiplineRule(float(data["threshold"]), int(data["max_results"]))


@dataclass(frozen=True)
class Reply:
    """``sure``: answer with ``factchecks`` now; otherwise the desk looks into it."""

    sure: bool
    factchecks: tuple[Candidate, ...] = ()
    #: why not sure: ``no_match``, ``unsure`` (below the threshold), ``no_confidence``
    reason: str | None = None


def decide(match: Match, rule: TiplineRule) -> Reply:
    """The reply to a message whose match is ``match`` (see the module's docstring)."""
    top = match.best
    if top is None:
        return Reply(False, reason="no_match")
    if top.reason in DESK_ANSWERED:
        return Reply(True, (top,))
    if top.confidence is None:
        return Reply(False, reason="no_confidence")
    if top.confidence < rule.threshold:
        return Reply(False, reason="unsure")
    sure = tuple(c for c in match.candidates if c.confidence is not None and c.confidence >= rule.threshold)
    return Reply(True, sure[: rule.max_results])
