"""The webhook events FactSieve sends, and which subscription wants one.

The vocabulary the desk (``plugin.review.events``), the post and verification jobs and the
webhook store (``plugin.service.webhooks``) share: pure, on the ground floor, so a stage can say
which event it plans without importing the store that delivers it."""
from __future__ import annotations

from enum import Enum
from typing import Any

__all__ = ["Event", "wants"]


class Event(str, Enum):
    #: a post submitted to ``/v1/posts`` matched fact-checks above the subscription's threshold
    POST_MATCHED = "post.matched"
    #: a verification job finished (every subscription to it whose languages include the claim's)
    CLAIM_VERIFIED = "claim.verified"
    #: a reviewer's decision (plugin.review)
    MATCH_CONFIRMED = "match.confirmed"
    MATCH_REJECTED = "match.rejected"
    #: a reviewer took a decision back (``undo``): the data names the decision undone
    MATCH_UNDONE = "match.undone"
    #: a claim gained the tenant's ``trending_posts`` posts within ``trending_window_hours``
    #: (``plugin.claims.trending``); once per claim and window
    CLAIM_TRENDING = "claim.trending"


def wants(subscription: dict[str, Any], event: Event, lang: str | None,
          best_score: float | None) -> bool:
    """Whether a subscription receives an event for a post in ``lang`` whose best match scored
    ``best_score`` (``None``: no match, which ``post.matched`` never delivers)."""
    if event.value not in subscription["events"]:
        return False
    languages = subscription.get("languages")
    if languages and lang not in languages:
        return False
    if event is not Event.POST_MATCHED:
        return True  # no match score: min_score is for post.matched
    if best_score is None:
        return False
    min_score = subscription.get("min_score")
    return min_score is None or best_score >= min_score
