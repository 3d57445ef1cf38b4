"""Which claim a post joins, and which post leads a claim: the one place that decides both (pure).

**Joining.** A post arriving is compared with the tenant's earlier posts that the posts index
returns for it (its nearest neighbours by embedding, and the posts whose best match is the same
fact-check). An earlier post *links* to it by any of the rule's signals:

- ``embedding``: the cosine similarity of the two posts' embeddings (the base model's query side
  over the normalised post, as the posts index stores it) is at least ``min_similarity``;
- ``same_claim``: the matcher's same-claim test (word-set Jaccard of the normalised texts at
  ``same_claim`` or above), which holds for a re-post with a link or a mention added;
- ``same_answer``: both posts' best match is the same fact-check, each at a calibrated confidence
  of ``same_answer`` or above, and their embeddings' cosine similarity is at least
  ``same_answer_similarity`` (two posts one fact-check answers make its claim; the similarity
  keeps out two different claims that one broad fact-check happens to top);
- ``bm25``: the earlier post's BM25 score for the new post's words, over the new post's score
  for its own words, is at least ``bm25`` (the lab measures it; ``None`` in the served rule);
- ``image``: the PDQ hashes of the posts' images are within ``image_distance`` bits.

The post joins the claim of the linked earlier post with the highest embedding similarity whose
claim it is not kept out of, and starts a claim of its own otherwise. The desk's "not the same
claim" (splitting a post out of its claim) is a cannot-link: the post, and every later post linked
to it, is kept out of that claim. Merging two claims by hand re-points the posts of one to the
other: later posts linked to any of them join the merged claim (a must-link). Claims are never merged by a post that links to two of them
(a chain of re-posts must not fuse two claims the desk keeps apart): merging is the desk's.

**The lead post** of a claim (what the queue shows for it): a post the desk confirmed a
fact-check for, then the post whose best match is most confident, then the earliest, then the
smallest id — Meedan Check's rule (a published fact-check, then a claim, then …) in our terms.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from plugin.errors import BadInput
from plugin.image.pdq import hamming
from plugin.search.duplicates import similar

#: the served join rule (data)
RULE_FILE = Path(__file__).with_name("join.json")
#: the signals, in the order reports list them
SIGNALS = ("embedding", "same_claim", "same_answer", "bm25", "image")


@dataclass(frozen=True)
class JoinRule:
    """When a post links to an earlier one (see the module's docstring); ``None`` switches a
    signal off. The served values are ``join.json``'s (``served_rule``)."""

    min_similarity: float | None
    same_claim: float | None
    same_answer: float | None
    same_answer_similarity: float
    bm25: float | None
    image_distance: int | None
    #: how many nearest posts by embedding the join reads
    neighbours: int = 10

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> JoinRule:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known - {"description"})
        if unknown:
            raise BadInput(f"unknown join rule fields: {', '.join(unknown)}")
        return cls(**{k: v for k, v in data.items() if k in known})

    def only(self, signals: Iterable[str]) -> JoinRule:
        """This rule with every signal not in ``signals`` off."""
        keep = set(signals)
        unknown = keep - set(SIGNALS)
        if unknown:
            raise BadInput(f"unknown signals: {', '.join(sorted(unknown))} (known: {', '.join(SIGNALS)})")
        return replace(self,
                       min_similarity=self.min_similarity if "embedding" in keep else None,
                       same_claim=self.same_claim if "same_claim" in keep else None,
                       same_answer=self.same_answer if "same_answer" in keep else None,
                       bm25=self.bm25 if "bm25" in keep else None,
                       image_distance=self.image_distance if "image" in keep else None)


@lru_cache(maxsize=1)
def served_rule() -> JoinRule:
    """The join rule the post job applies (``join.json``)."""
    return JoinRule.from_mapping(json.loads(RULE_FILE.read_text(encoding="utf-8")))


@dataclass(frozen=True)
class PostSignals:
    """What the join compares of one post: its words (``plugin.search.duplicates.post_words``), its
    best match and that match's confidence, its image's PDQ hash."""

    post_id: str
    words: frozenset[str] = frozenset()
    answer: str | None = None
    answer_confidence: float | None = None
    image_hash: str | None = None
    #: the claims the desk split this post out of (cannot-links)
    kept_out: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Earlier:
    """An earlier post as the join sees it: its signals, its claim, its embedding similarity to
    the post arriving and (where measured) its normalised BM25 score for it."""

    post: PostSignals
    claim_id: str
    similarity: float = 0.0
    bm25: float | None = None
    #: the claim the post joined, when the desk has since merged it into ``claim_id``
    joined_claim: str | None = None

    @property
    def kept_by(self) -> str:
        """The claim a cannot-link is checked against: the one the post joined (a merge by hand
        is a must-link that overrides a cannot-link made before it)."""
        return self.joined_claim or self.claim_id


def links(rule: JoinRule, post: PostSignals, earlier: Earlier) -> tuple[str, ...]:
    """The signals by which ``earlier`` links to ``post`` (empty: it does not)."""
    out = []
    if rule.min_similarity is not None and earlier.similarity >= rule.min_similarity:
        out.append("embedding")
    if rule.same_claim is not None and similar(post.words, earlier.post.words, rule.same_claim):
        out.append("same_claim")
    if (rule.same_answer is not None and post.answer and post.answer == earlier.post.answer
            and (post.answer_confidence or 0.0) >= rule.same_answer
            and (earlier.post.answer_confidence or 0.0) >= rule.same_answer
            and earlier.similarity >= rule.same_answer_similarity):
        out.append("same_answer")
    if rule.bm25 is not None and earlier.bm25 is not None and earlier.bm25 >= rule.bm25:
        out.append("bm25")
    if (rule.image_distance is not None and post.image_hash and earlier.post.image_hash
            and hamming(post.image_hash, earlier.post.image_hash) <= rule.image_distance):
        out.append("image")
    return tuple(out)


@dataclass(frozen=True)
class Joined:
    """The join's answer: the claim the post joins (``None``: a claim of its own), through which
    earlier post and by which signals."""

    claim_id: str | None
    via: str | None = None
    signals: tuple[str, ...] = ()
    similarity: float | None = None


def choose(rule: JoinRule, post: PostSignals, earlier: Sequence[Earlier],
           kept_out: frozenset[str] = frozenset()) -> Joined:
    """The claim ``post`` joins (see the module's docstring); ``kept_out``: claims the desk split
    this post out of. A post the desk split out of a claim keeps the posts linked to it out of
    that claim too (its cannot-links hold for its re-posts)."""
    linked = [(e, found) for e in earlier if e.post.post_id != post.post_id and (found := links(rule, post, e))]
    kept_out = kept_out | post.kept_out | frozenset().union(*(e.post.kept_out for e, _ in linked))
    best: tuple[Earlier, tuple[str, ...]] | None = None
    for e, found in linked:
        if e.kept_by in kept_out:
            continue
        if found and (best is None or (e.similarity, e.post.post_id) > (best[0].similarity, best[0].post.post_id)):
            best = (e, found)
    if best is None:
        return Joined(None)
    e, found = best
    return Joined(e.claim_id, e.post.post_id, found, round(e.similarity, 4))


@dataclass(frozen=True)
class Member:
    """A post of a claim as the lead rule reads it."""

    post_id: str
    at: str
    confirmed: bool = False
    confidence: float | None = None


def lead_of(members: Iterable[Member]) -> str | None:
    """The claim's lead post (see the module's docstring); ``None`` for no posts."""
    ranked = sorted(members, key=lambda m: (not m.confirmed, -(m.confidence or 0.0), m.at, m.post_id))
    return ranked[0].post_id if ranked else None
