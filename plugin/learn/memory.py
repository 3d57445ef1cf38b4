"""Memory: what the tenant's desk decided on a post holds for the same post and its re-posts.

A post is compared with the tenant's earlier posts (``memory_store.PostMemory``: the same
``post_id``, or one of its nearest neighbours in the posts index whose cosine similarity to it
is at least ``FACTSIEVE_MEMORY_MIN_SIMILARITY`` or that makes the same claim by the matcher's
word-set test). The desk's live decisions on those posts (an undone
decision and its undo teach nothing, ``plugin.review.model.superseded``; an ``auto`` decision
counts like a person's until someone undoes it) then change the match result:

- a rejected pair (``reject`` of that fact-check, ``reject`` of all shown, ``none``: every
  candidate shown then) is dropped;
- a confirmed pair (``confirm``, ``manual``) comes first, with ``reason: "confirmed-by-desk"``,
  ``memory: {post_id, similarity, decision_id}`` and the confidence ``memory_confidence`` gives
  it; a confirmed fact-check the matcher did not return is fetched and put in.

When posts disagree the closest wins (the same post, then the most similar one, then the newest
decision). A confirm says nothing about the other candidates shown with it: they stay, after it.
``not_a_claim`` teaches no pair. The functions here are pure; ``Memory`` is the step
``plugin.learn.steps.Learning`` runs first.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from plugin.models import CONFIRMED_BY_DESK, STORED_FIELDS
from plugin.review.model import Action, superseded
from plugin.review.records import Decision, Origin
from plugin.search.duplicates import DUPLICATE_JACCARD, post_words, similar
from plugin.search.result import Candidate, Match

#: actions that confirm their fact-check, and those that reject what they name (or all shown)
CONFIRMS = frozenset({Action.CONFIRM, Action.MANUAL})
REJECTS = frozenset({Action.REJECT, Action.NONE})
#: the confidence of a pair the desk confirmed on this very post: the desk's word, less the
#: odd reviewer slip
SAME_POST_CONFIDENCE = 0.99
#: ``(lowest cosine similarity, confidence)``, highest first: the lower bound of the 95 % Wilson
#: interval of memory's precision measured at that similarity (``scripts/memory_stream.py``; the
#: counts are in docs/learning.md#memory); below the threshold (a neighbour the same-claim test
#: alone let in) the band under it applies
SIMILARITY_PRECISION: tuple[tuple[float, float], ...] = ((0.93, 0.96), (0.0, 0.75))


@dataclass(frozen=True)
class Neighbour:
    """An earlier post of the tenant and its cosine similarity to the post being matched."""

    post_id: str
    similarity: float
    text: str | None = None


@dataclass(frozen=True)
class RememberedDecision:
    """What the desk's word is on one fact-check for the post being matched, and why: a decision
    remembered from a near-identical post (not a claim's ``plugin.models.Verdict``)."""

    factcheck_id: str
    confirmed: bool
    post_id: str
    similarity: float
    decision_id: str
    same_post: bool = False


def near_duplicates(post_id: str | None, neighbours: Iterable[Neighbour], min_similarity: float,
                    text: str | None = None, jaccard: float | None = DUPLICATE_JACCARD
                    ) -> list[Neighbour]:
    """The posts whose decisions apply, closest first: the post itself (similarity 1.0, by its
    id, whatever its text is now) and each neighbour at ``min_similarity`` or above, or making the
    same claim (the matcher's test, ``plugin.search.duplicates``: word-set Jaccard of the
    normalised texts at ``jaccard`` or above; ``None``: not used), once."""
    out = [Neighbour(post_id, 1.0)] if post_id else []
    seen = {post_id}
    mine = post_words(text) if jaccard is not None else frozenset()
    for n in sorted(neighbours, key=lambda n: -n.similarity):
        if n.post_id in seen:
            continue
        if n.similarity >= min_similarity or (
                jaccard is not None and similar(mine, post_words(n.text), jaccard)):
            out.append(n)
            seen.add(n.post_id)
    return out


def live_decisions(decisions: Iterable[Decision]) -> dict[str, Decision]:
    """Each post's decision in force, ``{post_id: decision}``: the newest one no undo took back
    (an undo itself is not in force). A post whose last decision was undone has none."""
    # the public's "helped" on a tipline is not the desk's decision: memory never answers from it
    decisions = [d for d in decisions if d.origin is not Origin.TIPLINE]
    gone = superseded(decisions)
    out: dict[str, Decision] = {}
    for d in sorted(decisions, key=lambda d: (d.at or "", d.id or "")):
        if d.id in gone or d.undoes:
            continue
        out[d.post_id] = d
    return out


def pairs_of(decision: Decision) -> list[tuple[str, bool]]:
    """``(fact-check, confirmed)`` pairs one decision states: a confirm or manual its fact-check;
    a reject the one it names, or every candidate shown when it names none; ``none`` every
    candidate shown; ``not_a_claim`` nothing."""
    action, fc = decision.action, decision.factcheck_id
    if action in CONFIRMS and fc:
        return [(fc, True)]
    if action is Action.REJECT and fc:
        return [(fc, False)]
    if action in REJECTS:
        return [(c.factcheck_id, False) for c in decision.candidates or ()]
    return []


def verdicts(near: Sequence[Neighbour], live: Mapping[str, Decision],
             post_id: str | None = None) -> dict[str, RememberedDecision]:
    """The desk's word per fact-check over the near-duplicates ``near`` (closest first, as
    ``near_duplicates`` orders them; equally close posts: the newest decision first); the first
    post that says something about a fact-check wins it."""
    ranked = sorted((n for n in near if n.post_id in live),
                    key=lambda n: live[n.post_id].at or "", reverse=True)
    ranked.sort(key=lambda n: -n.similarity)  # stable: the newest first among equals
    out: dict[str, RememberedDecision] = {}
    for n in ranked:
        d = live[n.post_id]
        for fc, confirmed in pairs_of(d):
            out.setdefault(fc, RememberedDecision(fc, confirmed, n.post_id, round(n.similarity, 4), d.id,
                                       same_post=post_id is not None and n.post_id == post_id))
    return out


def memory_confidence(v: RememberedDecision, matched: float | None = None) -> float:
    """A confirmed pair's confidence: ``SAME_POST_CONFIDENCE`` on the post the desk decided, else
    the measured precision of memory at the re-post's similarity (``SIMILARITY_PRECISION``); never
    below what the matcher gave the pair itself."""
    said = SAME_POST_CONFIDENCE if v.same_post else next(
        p for low, p in SIMILARITY_PRECISION if v.similarity >= low)
    return max(said, matched) if matched is not None else said


def fetched_match(factcheck_id: str, source: Mapping[str, Any]) -> Candidate:
    """A match for a confirmed fact-check the matcher did not return (from its stored fields):
    no retrieval score, nothing to explain but the memory."""
    return Candidate(id=factcheck_id, score=0.0, rank=0, confidence=None,
                     fields={name: source.get(name) for name in STORED_FIELDS if name != "id"})


def remembered(result: Match, said: Mapping[str, RememberedDecision],
               fetched: Mapping[str, Mapping[str, Any]] | None = None) -> Match:
    """``result`` with the desk's word applied: rejected pairs dropped, confirmed ones first
    (closest post first; ``fetched``: sources of confirmed fact-checks missing from the matches),
    marked and given ``memory_confidence``; ranks renumbered 1… in the new order. At most as many
    matches as before (one when there were none). Unchanged (the same match) when the desk said
    nothing about any of them."""
    matches = list(result.candidates)
    have = {m.id for m in matches}
    confirmed = [v for v in said.values() if v.confirmed]
    confirmed.sort(key=lambda v: not v.same_post)  # stable: said's order (closest first) otherwise
    add = [v for v in confirmed if v.factcheck_id not in have and v.factcheck_id in (fetched or {})]
    if not add and not any(m.id in said for m in matches):
        return result
    by_id = {m.id: m for m in matches}
    by_id.update({v.factcheck_id: fetched_match(v.factcheck_id, (fetched or {})[v.factcheck_id])
                  for v in add})
    first = []
    for v in confirmed:
        m = by_id.get(v.factcheck_id)
        if m is not None:
            first.append(replace(m, confidence=memory_confidence(v, m.confidence), reason=CONFIRMED_BY_DESK,
                                 memory={"post_id": v.post_id, "similarity": v.similarity,
                                         "decision_id": v.decision_id}))
    rest = [m for m in matches if m.id not in said]
    out = (first + rest)[:max(len(matches), 1)]
    return replace(result, candidates=tuple(replace(m, rank=i) for i, m in enumerate(out, 1)))


class PostReader(Protocol):
    """What the memory step reads (``memory_store.PostMemory`` over OpenSearch)."""

    def has_decisions(self, tenant: str) -> bool: ...

    def vector(self, text: str) -> list[float]: ...

    def neighbours(self, tenant: str, vector: Sequence[float], k: int) -> list[Neighbour]: ...

    def decisions(self, tenant: str, post_ids: Sequence[str]) -> list[Decision]: ...

    def factchecks(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]: ...


class Memory:
    """The memory step of ``Learning``: two reads per post (its neighbours, their decisions),
    a third only to fetch a confirmed fact-check the matcher did not return; none for a tenant
    whose desk has decided nothing yet (``PostReader.has_decisions``)."""

    def __init__(self, posts: PostReader, *, min_similarity: float, neighbours: int,
                 same_claim: float | None = DUPLICATE_JACCARD) -> None:
        self.posts = posts
        self.min_similarity = min_similarity
        self.k = neighbours
        #: the same-claim test's Jaccard threshold (``near_duplicates``; ``None``: cosine only)
        self.same_claim = same_claim

    def near(self, tenant: str, post: Mapping[str, Any]) -> list[Neighbour]:
        """The tenant's posts whose decisions apply to ``post``, closest first."""
        text = post.get("text")
        found = self.posts.neighbours(tenant, self.posts.vector(text), self.k) if text else []
        return near_duplicates(post.get("id"), found, self.min_similarity, text, self.same_claim)

    def apply(self, tenant: str, post: Mapping[str, Any], result: Match) -> Match:
        if not self.posts.has_decisions(tenant):
            return result
        near = self.near(tenant, post)
        if not near:
            return result
        live = live_decisions(self.posts.decisions(tenant, [n.post_id for n in near]))
        said = verdicts(near, live, post.get("id"))
        if not said:
            return result
        have = {m.id for m in result.candidates}
        missing = [fc for fc, v in said.items() if v.confirmed and fc not in have]
        return remembered(result, said, self.posts.factchecks(missing) if missing else {})
