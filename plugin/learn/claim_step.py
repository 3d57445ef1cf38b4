"""The claim step of ``Learning``: a post whose claim the desk answered gets that fact-check first.

The post's claim is the one the post job joins it to (``plugin.claims.cluster.choose`` over the
same reads of earlier posts, without the image signal, which only a post job's image gives), found
here without writing anything, so ``POST /v1/match``, the desk's search and post jobs give a post
the same answer. The answer itself is ``plugin.claims.answer.inherited``. No read for a tenant
none of whose claims was ever answered (``ClaimStore.has_answered``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from plugin.claims.answer import inherited
from plugin.claims.cluster import Earlier, JoinRule, PostSignals, choose, served_rule
from plugin.claims.records import Claim
from plugin.search.duplicates import post_words
from plugin.search.result import Match


class ClaimReader(Protocol):
    def has_answered(self, tenant: str) -> bool: ...

    def earlier(self, tenant: str, vector: Sequence[float], k: int, answer: str | None) -> list[Earlier]: ...

    def find(self, tenant: str, claim_id: str) -> Claim | None: ...


class PostVectors(Protocol):
    def vector(self, text: str) -> list[float]: ...

    def factchecks(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]: ...


class ClaimAnswer:
    def __init__(self, claims: ClaimReader, posts: PostVectors, rule: JoinRule | None = None) -> None:
        self.claims = claims
        self.posts = posts
        self.rule = rule

    def apply(self, tenant: str, post: Mapping[str, Any], result: Match) -> Match:
        text = post.get("text")
        if not text or not self.claims.has_answered(tenant):
            return result
        rule = self.rule or served_rule()
        top = result.best
        mine = PostSignals(str(post.get("id") or ""), post_words(text), top.id if top else None,
                           top.confidence if top else None)
        joined = choose(rule, mine, self.claims.earlier(tenant, self.posts.vector(text), rule.neighbours, mine.answer))
        claim = self.claims.find(tenant, joined.claim_id) if joined.claim_id else None
        fc = claim.fact_check if claim is not None else None
        if fc is None or not fc.confirmed:
            return result
        source = None if any(c.id == fc.id for c in result.candidates) else self.posts.factchecks([fc.id]).get(fc.id)
        return inherited(result, fc.id, claim.id, source)
