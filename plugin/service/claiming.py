"""A matched post joins its claim (the post job's step between the match and the stored post),
and the desk decides a claim once for all its posts.

The join reads the earlier posts (``ClaimStore.earlier``), ``plugin.claims.cluster.choose``
decides, the post is written with its claim (``PostMemory.remember``) and then counted in it
(``ClaimStore.add_post``). A job retried after the post was written keeps the claim the post
joined (read back from the post), and the claim counts it once (``records.add_post``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from plugin.claims.checkworthy import load_head
from plugin.claims.cluster import Joined, JoinRule, PostSignals, choose, served_rule
from plugin.claims.trending import due, window_start
from plugin.claims.records import Claim, ClaimPost
from plugin.claims.store import ClaimStore, new_claim_id, now_iso
from plugin.errors import Conflict, ContentTooLarge, InvalidRequest, NotFound
from plugin.image.model import ImageAnalysis
from plugin.learn.memory_store import PostMemory
from plugin.models import post_doc_id
from plugin.search.duplicates import post_words
from plugin.review.desk import ReviewDesk
from plugin.review.rules import TenantRules
from plugin.review.records import ReviewItem, ReviewStatus
from plugin.search.result import Match


@dataclass(frozen=True)
class ClaimJoin:
    """What the post job records of the join: the claim, how the post joined it, and the
    fields the post's stored document carries for later joins."""

    claim_id: str
    joined: Joined
    fields: Mapping[str, Any]
    #: the post as the join saw it, and its vector (``None`` for a post that joined before: a
    #: retried job), which ``count`` leaves for the next seconds' joins (``plugin.claims.recent``)
    signals: PostSignals | None = None
    vector: Sequence[float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"claim_id": self.claim_id, "via": self.joined.via, "signals": list(self.joined.signals),
                "similarity": self.joined.similarity, "check_worthiness": self.fields.get("check_worthiness")}


def signals_of(post: Mapping[str, Any], found: Match, image: ImageAnalysis | None) -> PostSignals:
    top = found.best
    return PostSignals(str(post["id"]), post_words(post.get("text")), top.id if top else None,
                       top.confidence if top else None,
                       image.pdq.hex if image is not None and image.pdq is not None else None)


def join(claims: ClaimStore, posts: PostMemory, tenant: str, post: Mapping[str, Any], found: Match,
         image: ImageAnalysis | None, rule: JoinRule | None = None, worth: float | None = None) -> ClaimJoin:
    """The claim ``post`` joins (nothing written yet)."""
    rule = rule or served_rule()
    mine = signals_of(post, found, image)
    before = claims.joined_before(tenant, post_doc_id(tenant, mine.post_id))
    vector = None
    if before is not None:
        joined = Joined(before)
    else:
        vector = posts.vector(post["text"])
        joined = choose(rule, mine, claims.earlier(tenant, vector, rule.neighbours, mine.answer))
    claim_id = joined.claim_id or new_claim_id(tenant, mine.post_id)
    fields = {"claim_id": claim_id, "answer": mine.answer, "answer_confidence": mine.answer_confidence,
              "image_hash": mine.image_hash, "check_worthiness": worth}
    return ClaimJoin(claim_id, joined, fields, mine, vector)


def check_worthiness(posts: PostMemory, post: Mapping[str, Any]) -> float | None:
    """The post's check-worthiness (``plugin.claims.checkworthy``) from the embedding the posts
    index stores for it; ``None`` without a head for this process's embedding model."""
    head = load_head()
    model = getattr(getattr(posts, "embedder", None), "name", None)
    if head is None or not post.get("text") or head.embedding_model != model:
        return None
    return round(head.score(posts.vector(post["text"])), 4)


def count(claims: ClaimStore, tenant: str, post: Mapping[str, Any], lang: str | None, found: Match,
          join_: ClaimJoin, at: str | None = None) -> Claim:
    """Count the (written) post in its claim, and leave it for the next seconds' joins."""
    top = found.best
    claim = claims.add_post(tenant, join_.claim_id, ClaimPost(
        str(post["id"]), post.get("text") or "", lang, at or now_iso(),
        top.id if top else None, top.claim if top else None,
        top.confidence if top else None, join_.fields.get("check_worthiness")))
    if claims.recent is not None and join_.signals is not None and join_.vector is not None:
        claims.recent.push(tenant, join_.signals, post.get("text") or "", claim.id, join_.vector)
    return claim


def trend(claims: ClaimStore, rules: TenantRules, tenant: str, claim: Claim, post_id: str) -> tuple[Claim, int] | None:
    """The claim and its posts in the window when its ``claim.trending`` alert is due now (marked
    sent: once per claim and window, ``plugin.claims.trending``); ``None`` otherwise, and for a
    tenant without a ``trending_posts`` rule (no read)."""
    if rules.trending_posts is None or claim.post_count < rules.trending_posts:
        return None
    since = window_start(claims.clock(), rules.trending_window_hours)
    if claim.trending_at is not None and claim.trending_at >= since:
        if claim.trending_by == post_id:  # this post's job marked it and died before planning it
            return claim, claims.posts_since(tenant, claim, since, post_id)
        return None  # alerted within the window: no read
    n = claims.posts_since(tenant, claim, since, post_id)
    if not due(claim, n, rules.trending_posts, rules.trending_window_hours, claims.clock()):
        return None
    marked = claims.mark_trending(tenant, claim.id, n, rules.trending_posts, rules.trending_window_hours, post_id)
    return (marked, n) if marked is not None else None


#: the most posts one claim decision applies to at once (a bigger claim: 413, decide it in parts
#: through ``POST /v1/review/decisions``)
CLAIM_DECISION_MAX_POSTS = 2000
#: the actions a claim takes, and what each post's item gets
CLAIM_ACTIONS = ("confirm", "manual", "reject", "none", "not_a_claim")


def post_decision(item: ReviewItem, action: str, factcheck_id: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """The decision a post's pending item gets from its claim's (``None`` and why not)."""
    if item.status is not ReviewStatus.PENDING:
        return None, f"already {item.status.value}"
    shown = {c.factcheck_id for c in item.candidates}
    if action in ("confirm", "manual"):
        return {"post_id": item.post_id, "factcheck_id": factcheck_id,
                "action": "confirm" if factcheck_id in shown else "manual"}, None
    if action == "reject":
        if factcheck_id is not None and factcheck_id not in shown:
            return None, "the fact-check is not among its candidates"
        return {"post_id": item.post_id, "action": "reject", "factcheck_id": factcheck_id}, None
    return {"post_id": item.post_id, "action": action}, None


def decide_claim(claims: ClaimStore, review: ReviewDesk, posts: PostMemory, tenant: str, actor: str,
                 claim_id: str, action: str, factcheck_id: str | None = None, note: str | None = None,
                 origin: str = "api", bulk: int = 200) -> dict[str, Any]:
    """One decision for the claim, applied to every post of it with a pending review item
    (``confirm`` becomes ``manual`` where the fact-check was not among a post's candidates; each
    post's decision sends its ``match.confirmed``/``match.rejected`` as the desk's do), then to the
    claim, which later posts inherit (``plugin.claims.answer``). Posts already decided keep their
    decision; what was skipped and why is in the answer. A retry decides what is left."""
    if action not in CLAIM_ACTIONS:
        raise InvalidRequest(f"action: {str(action)[:80]!r} is not one of {', '.join(CLAIM_ACTIONS)}", errors=[
            {"field": "action", "message": f"not one of {', '.join(CLAIM_ACTIONS)}", "type": "enum"}])
    claim = claims.get(tenant, claim_id)
    if claim.merged_into:
        raise Conflict(f"claim {claim_id!r} was merged into {claim.merged_into!r}: decide that one")
    if action in ("confirm", "manual") and not factcheck_id:
        if claim.fact_check is None:
            raise InvalidRequest("factcheck_id: required: the claim has no fact-check to confirm", errors=[
                {"field": "factcheck_id", "message": "required", "type": "missing"}])
        factcheck_id = claim.fact_check.id
    text = None
    if factcheck_id:
        found = posts.factchecks([factcheck_id]).get(factcheck_id)
        if found is None and action in ("confirm", "manual"):
            raise NotFound(f"no fact-check with id {factcheck_id[:200]!r}")
        text = (found or {}).get("claim")
    ids = claims.post_ids(tenant, claim, CLAIM_DECISION_MAX_POSTS + 1)
    if len(ids) > CLAIM_DECISION_MAX_POSTS:
        raise ContentTooLarge(f"claim {claim_id!r} has over {CLAIM_DECISION_MAX_POSTS} posts: decide them "
                              f"in parts with POST /v1/review/decisions")
    items = review.items_of(tenant, ids)
    wanted, skipped = [], []
    for pid in ids:
        item = items.get(pid)
        one, why = post_decision(item, action, factcheck_id) if item is not None else (None, "no review item")
        if one is None:
            skipped.append({"post_id": pid, "reason": why})
        else:
            wanted.append({**one, **({"note": note} if note else {})})
    recorded, lost = [], []
    for i in range(0, len(wanted), bulk):
        try:
            done = review.decide_batch(tenant, actor, wanted[i:i + bulk], origin=origin)
        except Conflict as exc:  # every item of the batch was decided by someone else meanwhile
            lost.extend({"post_id": d["post_id"], "reason": exc.detail} for d in wanted[i:i + bulk])
            continue
        recorded.extend(d.to_dict() for d in done.recorded)
        lost.extend(n.to_dict() for n in done.not_recorded)
    updated = claims.decide(tenant, claim_id, action, factcheck_id, text)
    return {"claim": updated.to_dict(), "decisions": recorded, "skipped": skipped, "not_recorded": lost}

