"""A claim and what a post adds to it: typed records, parsed and serialised only at the edges (pure).

``add_post`` is the one place a claim's counts, lead post and best fact-check change when a post
joins: it is idempotent (a post already among the claim's ``recent_posts`` changes nothing), so a
post job retried after it wrote the post but before the claim was updated adds its post once.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from typing import Any

from plugin.claims.cluster import Member, lead_of

#: how many of the last posts added a claim remembers, to add a retried post once
RECENT_POSTS = 100
#: the days of counts a claim's answer shows (its sparkline); all days are kept in the document
SPARKLINE_DAYS = 14
#: the least confidence at which a post's best match is its claim's fact-check (even odds)
MIN_ANSWER_CONFIDENCE = 0.5


class Status:
    """A claim's status: ``open`` until a fact-check is confirmed for it (``answered``) or the desk
    says it is ``not_a_claim``;
    ``merged`` once the desk merged it into another (``merged_into``), which then counts its posts."""

    OPEN = "open"
    ANSWERED = "answered"
    #: the desk said its posts make no checkable claim
    NOT_A_CLAIM = "not_a_claim"
    MERGED = "merged"
    ALL = (OPEN, ANSWERED, NOT_A_CLAIM, MERGED)


@dataclass(frozen=True)
class Lead:
    """The claim's lead post (``cluster.lead_of`` decides it)."""

    post_id: str
    text: str
    lang: str | None
    at: str
    confidence: float | None = None
    confirmed: bool = False

    def member(self) -> Member:
        return Member(self.post_id, self.at, self.confirmed, self.confidence)


@dataclass(frozen=True)
class FactCheckRef:
    """The fact-check that answers the claim best: a confirmed one, else its posts' most confident
    best match."""

    id: str
    claim: str | None
    confidence: float | None
    confirmed: bool = False


@dataclass(frozen=True)
class ClaimPost:
    """A post as it joins a claim: its id, text, language, when it was seen, its best match."""

    post_id: str
    text: str
    lang: str | None
    at: str
    answer: str | None = None
    answer_claim: str | None = None
    answer_confidence: float | None = None
    check_worthiness: float | None = None


@dataclass(frozen=True)
class Claim:
    id: str
    tenant: str
    lead: Lead
    post_count: int
    first_seen: str
    last_seen: str
    langs: Mapping[str, int] = field(default_factory=dict)
    days: Mapping[str, int] = field(default_factory=dict)
    fact_check: FactCheckRef | None = None
    status: str = Status.OPEN
    check_worthiness: float | None = None
    recent_posts: tuple[str, ...] = ()
    updated_at: str | None = None
    #: the claim the desk merged this one into
    merged_into: str | None = None
    #: the last posts split out of it (a retried split takes its post out once)
    removed_posts: tuple[str, ...] = ()
    #: the claims merged into it, transitively: their posts keep their ``claim_id`` and count here
    absorbed: tuple[str, ...] = ()
    #: when its last ``claim.trending`` alert went (``plugin.claims.trending``), and the post
    #: whose job sent it (that job, retried, sends the same alert again: deduplicated downstream)
    trending_at: str | None = None
    trending_by: str | None = None

    @property
    def ids(self) -> tuple[str, ...]:
        """Its id and those of the claims merged into it: what its posts' ``claim_id`` may be."""
        return (self.id, *self.absorbed)

    # -- edges ------------------------------------------------------------------------------------
    @classmethod
    def from_source(cls, src: Mapping[str, Any]) -> Claim:
        fc = src.get("fact_check")
        return cls(id=src["claim_id"], tenant=src["tenant"], lead=Lead(**src["lead"]),
                   post_count=int(src["post_count"]), first_seen=src["first_seen"], last_seen=src["last_seen"],
                   langs=dict(src.get("langs") or {}), days=dict(src.get("days") or {}),
                   fact_check=FactCheckRef(**fc) if fc else None, status=src.get("status") or Status.OPEN,
                   check_worthiness=src.get("check_worthiness"),
                   recent_posts=tuple(src.get("recent_posts") or ()), updated_at=src.get("updated_at"),
                   merged_into=src.get("merged_into"), removed_posts=tuple(src.get("removed_posts") or ()),
                   absorbed=tuple(src.get("absorbed") or ()), trending_at=src.get("trending_at"),
                   trending_by=src.get("trending_by"))

    def to_source(self) -> dict[str, Any]:
        """The stored document."""
        return {"tenant": self.tenant, "claim_id": self.id, "status": self.status,
                "lead": vars(self.lead).copy(), "post_count": self.post_count,
                "lang_list": sorted(self.langs), "langs": dict(self.langs), "days": dict(self.days),
                "first_seen": self.first_seen, "last_seen": self.last_seen,
                "fact_check": vars(self.fact_check).copy() if self.fact_check else None,
                "check_worthiness": self.check_worthiness, "recent_posts": list(self.recent_posts),
                "updated_at": self.updated_at, "merged_into": self.merged_into,
                "removed_posts": list(self.removed_posts), "absorbed": list(self.absorbed),
                "trending_at": self.trending_at, "trending_by": self.trending_by}

    def to_dict(self, today: date | None = None) -> dict[str, Any]:
        """What the API shows: no ``recent_posts``; ``sparkline`` is the posts per day over the
        last ``SPARKLINE_DAYS`` days up to ``today`` (the day of ``last_seen`` when not given)."""
        end = today or date.fromisoformat(self.last_seen[:10])
        spark = [{"day": (d := (end - timedelta(days=i)).isoformat()), "posts": self.days.get(d, 0)}
                 for i in range(SPARKLINE_DAYS - 1, -1, -1)]
        return {"id": self.id, "status": self.status, "lead": vars(self.lead).copy(),
                "post_count": self.post_count, "langs": dict(sorted(self.langs.items())),
                "first_seen": self.first_seen, "last_seen": self.last_seen, "sparkline": spark,
                "fact_check": vars(self.fact_check).copy() if self.fact_check else None,
                "check_worthiness": self.check_worthiness, "merged_into": self.merged_into,
                "merged": list(self.absorbed), "trending_at": self.trending_at}


def new_claim(claim_id: str, tenant: str, post: ClaimPost, now: str) -> Claim:
    """A claim of one post (``add_post`` then counts it)."""
    return Claim(id=claim_id, tenant=tenant, lead=Lead(post.post_id, post.text, post.lang, post.at,
                                                      post.answer_confidence),
                 post_count=0, first_seen=post.at, last_seen=post.at, updated_at=now)


def better_answer(current: FactCheckRef | None, post: ClaimPost) -> FactCheckRef | None:
    """The claim's fact-check once ``post`` joined: a confirmed one stays; otherwise the more
    confident of the current one and the post's best match, when that is at least
    ``MIN_ANSWER_CONFIDENCE`` (a best match below even odds answers nothing)."""
    if post.answer is None or (current is not None and current.confirmed):
        return current
    if post.answer_confidence is not None and post.answer_confidence < MIN_ANSWER_CONFIDENCE:
        return current
    if current is not None and (current.confidence or 0.0) >= (post.answer_confidence or 0.0):
        return current
    return FactCheckRef(post.answer, post.answer_claim, post.answer_confidence)


def add_post(claim: Claim, post: ClaimPost, now: str) -> Claim:
    """``claim`` with ``post`` counted (see the module's docstring); unchanged when the post is
    among its recent posts."""
    if post.post_id in claim.recent_posts:
        return claim
    day = post.at[:10]
    langs = dict(claim.langs)
    lang = post.lang or "und"
    langs[lang] = langs.get(lang, 0) + 1
    days = dict(claim.days)
    days[day] = days.get(day, 0) + 1
    candidate = Lead(post.post_id, post.text, post.lang, post.at, post.answer_confidence)
    lead = candidate if lead_of([claim.lead.member(), candidate.member()]) == post.post_id else claim.lead
    return replace(claim, lead=lead, post_count=claim.post_count + 1, langs=langs, days=days,
                   first_seen=min(claim.first_seen, post.at), last_seen=max(claim.last_seen, post.at),
                   fact_check=better_answer(claim.fact_check, post),
                   check_worthiness=max((v for v in (claim.check_worthiness, post.check_worthiness) if v is not None),
                                        default=None),
                   recent_posts=(*claim.recent_posts, post.post_id)[-RECENT_POSTS:], updated_at=now)


def _less(counts: Mapping[str, int], key: str) -> dict[str, int]:
    out = dict(counts)
    if out.get(key, 0) > 1:
        out[key] -= 1
    else:
        out.pop(key, None)
    return out


def remove_post(claim: Claim, post: ClaimPost, lead: Lead | None, now: str) -> Claim:
    """``claim`` without ``post`` (the desk split it out): its counts less the post's, ``lead``
    (the store's pick among the posts left) when the post led it; unchanged when the post is among
    its recently removed posts (a retried split)."""
    if post.post_id in claim.removed_posts:
        return claim
    return replace(claim, post_count=max(claim.post_count - 1, 0), langs=_less(claim.langs, post.lang or "und"),
                   days=_less(claim.days, post.at[:10]),
                   lead=(lead or claim.lead) if claim.lead.post_id == post.post_id else claim.lead,
                   recent_posts=tuple(p for p in claim.recent_posts if p != post.post_id),
                   removed_posts=(*claim.removed_posts, post.post_id)[-RECENT_POSTS:], updated_at=now)


def merge_claims(into: Claim, other: Claim, now: str) -> Claim:
    """``into`` with ``other``'s posts counted (the desk merged them): counts summed, the span
    joined, the lead and the fact-check the better of the two."""
    langs, days = dict(into.langs), dict(into.days)
    for k, v in other.langs.items():
        langs[k] = langs.get(k, 0) + v
    for k, v in other.days.items():
        days[k] = days.get(k, 0) + v
    lead = other.lead if lead_of([into.lead.member(), other.lead.member()]) == other.lead.post_id else into.lead
    fc = into.fact_check
    if other.fact_check is not None and (fc is None or (other.fact_check.confirmed and not fc.confirmed) or (
            other.fact_check.confirmed == fc.confirmed and (other.fact_check.confidence or 0) > (fc.confidence or 0))):
        fc = other.fact_check
    status = Status.ANSWERED if fc is not None and fc.confirmed else into.status
    worth = max((v for v in (into.check_worthiness, other.check_worthiness) if v is not None), default=None)
    return replace(into, post_count=into.post_count + other.post_count, langs=langs, days=days, lead=lead,
                   first_seen=min(into.first_seen, other.first_seen), last_seen=max(into.last_seen, other.last_seen),
                   fact_check=fc, status=status, check_worthiness=worth, absorbed=tuple(dict.fromkeys((*into.absorbed, other.id, *other.absorbed))),
                   recent_posts=(*into.recent_posts, *other.recent_posts)[-RECENT_POSTS:], updated_at=now)


def decided(claim: Claim, action: str, factcheck_id: str | None, factcheck_claim: str | None, now: str) -> Claim:
    """``claim`` once the desk decided it: ``confirm``/``manual`` answer it with that fact-check
    (confirmed); ``not_a_claim`` marks it so; ``reject`` of its fact-check, or ``none``, takes its
    fact-check away (it is open again)."""
    if action in ("confirm", "manual") and factcheck_id:
        return replace(claim, status=Status.ANSWERED, updated_at=now,
                       fact_check=FactCheckRef(factcheck_id, factcheck_claim, 1.0, confirmed=True))
    if action == "not_a_claim":
        return replace(claim, status=Status.NOT_A_CLAIM, updated_at=now)
    if action == "none" or (action == "reject" and claim.fact_check is not None
                            and factcheck_id in (None, claim.fact_check.id)):
        return replace(claim, status=Status.OPEN, fact_check=None, updated_at=now)
    return claim


def claim_posts_of(hits: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A claim's posts as the API lists them, from posts-index hits (``_source``)."""
    return [{"post_id": h["_source"]["post_id"], "text": h["_source"].get("text"), "lang": h["_source"].get("lang"),
             "created_at": h["_source"].get("created_at"), "answer": h["_source"].get("answer"),
             "answer_confidence": h["_source"].get("answer_confidence")} for h in hits]


class EventAction:
    """The desk's changes to claims, each an event in the decision log with its actor."""

    SPLIT = "split"
    MERGE = "merge"


@dataclass(frozen=True)
class ClaimEvent:
    """A split (``posts`` taken out of ``claim_id`` into ``claims[0]``) or a merge (``claims``
    merged into ``claim_id``), as the decision log stores it (no ``post_id``: it is not a review
    decision, and the review reads never see it)."""

    id: str
    tenant: str
    action: str
    actor: str
    at: str
    origin: str
    claim_id: str
    claims: tuple[str, ...]
    posts: tuple[str, ...] = ()
    note: str | None = None

    @classmethod
    def from_source(cls, src: Mapping[str, Any]) -> ClaimEvent:
        return cls(id=src["id"], tenant=src["tenant"], action=src["action"], actor=src["actor"], at=src["at"],
                   origin=src["origin"], claim_id=src["claim_id"], claims=tuple(src.get("claims") or ()),
                   posts=tuple(src.get("posts") or ()), note=src.get("note"))

    def to_source(self) -> dict[str, Any]:
        return {"id": self.id, "tenant": self.tenant, "action": self.action, "actor": self.actor, "at": self.at,
                "origin": self.origin, "claim_id": self.claim_id, "claims": list(self.claims),
                "posts": list(self.posts), "note": self.note}

    def to_dict(self) -> dict[str, Any]:
        out = self.to_source()
        del out["tenant"]
        return out
