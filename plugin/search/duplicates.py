"""Near-duplicate fact-checks: syndicated debunks of one claim, by word-set Jaccard similarity.

One tokeniser and one test serve the matcher (which collapses duplicates out of its results) and
the lab (which counts a duplicate of a relevant fact-check as relevant too).
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from plugin.models import Fused

_WORD = re.compile(r"\w+", re.UNICODE)
#: word-set Jaccard from which two fact-checks' claims count as one (the lab's default)
DUPLICATE_JACCARD = 0.8


def words(text: str) -> frozenset[str]:
    """The lower-cased word set a claim is compared by."""
    return frozenset(_WORD.findall(text.lower()))


def post_words(text: str | None) -> frozenset[str]:
    """The word set the same-claim test compares posts by: of the normalised post, so a link,
    a retweet prefix or a mention added or taken away changes nothing (memory and claims)."""
    from plugin.search.normalize import normalize_post

    return words(normalize_post(text) or text) if text else frozenset()


def similar(a: frozenset[str], b: frozenset[str], threshold: float) -> bool:
    """Jaccard(a, b) ≥ ``threshold``; an empty set is like nothing."""
    if not a or not b:
        return False
    return len(a & b) / len(a | b) >= threshold


def same_claim(a: str, b: str, threshold: float) -> bool:
    """Near-duplicate test for syndicated debunks: word-set Jaccard similarity ≥ threshold."""
    return similar(words(a), words(b), threshold)


def collapse(fused: list[Fused], threshold: float, k: int) -> list[Fused]:
    """Keep the best-ranked fact-check of each near-duplicate group until ``k`` remain."""
    kept: list[Fused] = []
    for f in fused:
        claim = (f.source or {}).get("claim") or ""
        if any(same_claim(claim, (g.source or {}).get("claim") or "", threshold) for g in kept):
            continue
        kept.append(f)
        if len(kept) >= k:
            break
    return kept


def claim_words(claims: dict[str, str]) -> dict[str, frozenset[str]]:
    """Each fact-check's claim as the word set ``same_claim`` compares."""
    return {i: words(c) for i, c in claims.items()}


def duplicates_of(ids: Iterable[str], claim_sets: dict[str, frozenset[str]], *,
                  threshold: float = DUPLICATE_JACCARD) -> set[str]:
    """``ids`` and every fact-check whose claim is a near-duplicate of one of theirs (the test
    of ``same_claim`` over ``claim_words``)."""
    found = set(ids)
    for i in list(found):
        a = claim_sets.get(i)
        if not a:
            continue
        found |= {j for j, b in claim_sets.items() if j not in found and similar(a, b, threshold)}
    return found
