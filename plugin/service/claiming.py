"""A matched post joins its claim: the post job's step between the match and the stored post.

The join reads the earlier posts (``ClaimStore.earlier``), ``plugin.claims.cluster.choose``
decides, the post is written with its claim (``PostMemory.remember``) and then counted in it
(``ClaimStore.add_post``). A job retried after the post was written keeps the claim the post
joined (read back from the post), and the claim counts it once (``records.add_post``).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from plugin.claims.cluster import Joined, JoinRule, PostSignals, choose, served_rule
from plugin.claims.records import Claim, ClaimPost
from plugin.claims.store import ClaimStore, new_claim_id, now_iso
from plugin.image.model import ImageAnalysis
from plugin.learn.memory_store import PostMemory
from plugin.models import post_doc_id
from plugin.search.duplicates import post_words
from plugin.search.result import Match


@dataclass(frozen=True)
class ClaimJoin:
    """What the post job records of the join: the claim, how the post joined it, and the
    fields the post's stored document carries for later joins."""

    claim_id: str
    joined: Joined
    fields: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"claim_id": self.claim_id, "via": self.joined.via, "signals": list(self.joined.signals),
                "similarity": self.joined.similarity}


def signals_of(post: Mapping[str, Any], found: Match, image: ImageAnalysis | None) -> PostSignals:
    top = found.best
    return PostSignals(str(post["id"]), post_words(post.get("text")), top.id if top else None,
                       top.confidence if top else None,
                       image.pdq.hex if image is not None and image.pdq is not None else None)


def join(claims: ClaimStore, posts: PostMemory, tenant: str, post: Mapping[str, Any], found: Match,
         image: ImageAnalysis | None, rule: JoinRule | None = None) -> ClaimJoin:
    """The claim ``post`` joins (nothing written yet)."""
    rule = rule or served_rule()
    mine = signals_of(post, found, image)
    before = claims.joined_before(tenant, post_doc_id(tenant, mine.post_id))
    if before is not None:
        joined = Joined(before)
    else:
        vector = posts.vector(post["text"])
        joined = choose(rule, mine, claims.earlier(tenant, vector, rule.neighbours, mine.answer))
    claim_id = joined.claim_id or new_claim_id(tenant, mine.post_id)
    fields = {"claim_id": claim_id, "answer": mine.answer, "answer_confidence": mine.answer_confidence,
              "image_hash": mine.image_hash}
    return ClaimJoin(claim_id, joined, fields)


def count(claims: ClaimStore, tenant: str, post: Mapping[str, Any], lang: str | None, found: Match,
          join_: ClaimJoin, at: str | None = None) -> Claim:
    """Count the (written) post in its claim."""
    top = found.best
    return claims.add_post(tenant, join_.claim_id, ClaimPost(
        str(post["id"]), post.get("text") or "", lang, at or now_iso(),
        top.id if top else None, top.claim if top else None,
        top.confidence if top else None))
