"""What a claim's confirmed fact-check does to a later post's match (pure).

A post that joins a claim the desk answered (a fact-check confirmed for the claim) gets that
fact-check first, marked ``reason: "confirmed-for-claim"`` with the claim's id, at the confidence
the join earns: the lower bound of the 95 % Wilson interval of the join's measured pairwise
precision (26 of 27 predicted pairs right on CLEF-2020 dev+test; docs/claims.md), never below what
the matcher gave the pair. A match the desk's memory already decided for the post itself
(``confirmed-by-desk``: a nearer post's decision) is left as it is.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from plugin.models import CONFIRMED_BY_DESK, CONFIRMED_FOR_CLAIM, STORED_FIELDS
from plugin.search.result import Candidate, Match

#: see the module's docstring
CLAIM_CONFIDENCE = 0.82


def inherited(result: Match, factcheck_id: str, claim_id: str,
              source: Mapping[str, Any] | None = None) -> Match:
    """``result`` with the claim's confirmed fact-check first (``source``: its stored fields when
    the matcher did not return it; without them, and not returned, ``result`` as it is)."""
    top = result.best
    if top is not None and top.reason == CONFIRMED_BY_DESK:
        return result
    matches = list(result.candidates)
    found = next((m for m in matches if m.id == factcheck_id), None)
    if found is None:
        if source is None:
            return result
        found = Candidate(id=factcheck_id, score=0.0, rank=0, confidence=None,
                          fields={n: source.get(n) for n in STORED_FIELDS if n != "id"})
    first = replace(found, confidence=max(CLAIM_CONFIDENCE, found.confidence or 0.0), reason=CONFIRMED_FOR_CLAIM,
                    memory={"claim_id": claim_id})
    rest = [m for m in matches if m.id != factcheck_id]
    out = ([first] + rest)[:max(len(matches), 1)]
    return replace(result, candidates=tuple(replace(m, rank=i) for i, m in enumerate(out, 1)))
