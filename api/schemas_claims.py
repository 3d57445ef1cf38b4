"""The claims API's response models (``api.routes_claims``)."""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from api.schemas import Decision, Request, Response


class ClaimLead(Response):
    post_id: str
    text: str
    lang: str | None = None
    at: str
    confidence: float | None = None
    confirmed: bool = False


class ClaimFactCheck(Response):
    id: str
    claim: str | None = None
    confidence: float | None = None
    confirmed: bool = False


class SparkDay(Response):
    day: str
    posts: int


class ClaimOut(Response):
    id: str
    status: str = Field(description="open, or answered once a fact-check is confirmed for it")
    lead: ClaimLead = Field(description="the post the queue shows for the claim (docs: Claims, the lead post)")
    post_count: int
    langs: dict[str, int] = Field(description="posts per language")
    first_seen: str
    last_seen: str
    sparkline: list[SparkDay] = Field(description="posts per day, the last 14 days to the last post")
    fact_check: ClaimFactCheck | None = Field(
        default=None, description="a confirmed fact-check, else the most confident best match of its posts")
    check_worthiness: float | None = None
    merged_into: str | None = Field(default=None, description="the claim the desk merged it into")
    priority: float | None = Field(default=None, description="with `sort=priority`: its priority (docs: Claims)")
    merged: list[str] = Field(default_factory=list, description="the claims merged into it")


class ClaimPostOut(Response):
    post_id: str
    text: str | None = None
    lang: str | None = None
    created_at: str | None = None
    answer: str | None = Field(default=None, description="the post's best match when it joined")
    answer_confidence: float | None = None


class ClaimPage(Response):
    claims: list[ClaimOut]
    total: int
    next: str | None = Field(description="the cursor of the next page; null on the last")


def detail(claim: dict[str, Any], posts: dict[str, Any], events: list[dict[str, Any]]) -> ClaimDetail:
    return ClaimDetail.model_validate({**claim, "posts": posts["posts"], "posts_total": posts["total"],
                                       "posts_next": posts["next"], "events": events})


class SplitIn(Request):
    post_id: str = Field(min_length=1, max_length=512, description="a post of the claim, which is not the same claim")
    note: str | None = Field(default=None, max_length=2000)


class MergeIn(Request):
    claims: list[Annotated[str, Field(min_length=1, max_length=512)]] = Field(
        min_length=2, max_length=50, description="the claims that are one claim (at least two)")
    into: str | None = Field(default=None, min_length=1, max_length=512,
                             description="the claim they become (default: the one with the most posts)")
    note: str | None = Field(default=None, max_length=2000)


class ClaimEventOut(Response):
    id: str
    action: str = Field(description="split or merge")
    actor: str
    at: str
    origin: str
    claim_id: str = Field(description="split: the claim the posts left; merge: the claim the others went into")
    claims: list[str] = Field(description="split: the new claim; merge: the claims merged")
    posts: list[str] = Field(description="split: the posts taken out")
    note: str | None = None


class ClaimDetail(ClaimOut):
    posts: list[ClaimPostOut] = Field(description="a page of its posts, oldest first")
    posts_total: int
    posts_next: str | None = Field(description="the cursor of the posts' next page (`posts_cursor`)")
    events: list[ClaimEventOut] = Field(description="the desk's splits and merges of it, oldest first")


class SplitOut(Response):
    claim: ClaimOut
    new_claim: ClaimOut
    event: ClaimEventOut


class MergeOut(Response):
    claim: ClaimOut
    merged: list[str]
    event: ClaimEventOut


class ClaimDecisionIn(Request):
    action: Literal["confirm", "manual", "reject", "none", "not_a_claim"] = Field(
        description="confirm or manual: this fact-check answers the claim (default: its best); reject: "
                    "its fact-check (or the one named) is wrong; none: no candidate is right; not_a_claim")
    factcheck_id: str | None = Field(default=None, min_length=1, max_length=512)
    note: str | None = Field(default=None, max_length=2000)


class Skipped(Response):
    post_id: str
    reason: str


class ClaimDecisionOut(Response):
    claim: ClaimOut
    decisions: list[Decision] = Field(description="the decision recorded for each post with a pending item")
    skipped: list[Skipped] = Field(description="posts left as they were, and why (already decided, no item)")
    not_recorded: list[dict[str, Any]] = Field(description="posts another request decided meanwhile")
