"""The webhooks a recorded decision sends: ``match.confirmed`` for a confirm or manual match,
``match.rejected`` for a reject or "none of these", ``match.undone`` for an undo
(``model.EVENTS``), to the tenant's subscriptions whose languages include the post's, planned
and sent like ``post.matched``."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from plugin.events import Event
from plugin.review.model import EVENTS
from plugin.review.records import Action, Decision, Origin, ReviewItem


class Webhooks(Protocol):
    """What the notifier needs of the webhook store (``plugin.service.webhooks.WebhookStore``)."""

    def all(self, tenant: str) -> list[dict[str, Any]]: ...

    def plan(self, subscription: dict[str, Any], event: Event, data: dict[str, Any],
             dedupe_key: str) -> str: ...


#: what ``match.undone`` tells of the decision an undo took back
UNDONE_FIELDS = ("id", "action", "factcheck_id", "actor", "at", "origin")


def event_data(decision: Decision, item: ReviewItem, undone: Decision | None = None) -> dict[str, object]:
    """A decision event's ``data`` (the webhook's JSON): the decision (without the candidate
    snapshot), the post, and the fact-check it names as the item showed it (``None`` for a
    manual or a reject of all). An undo (``decision``, whose ``actor`` is who undid) names the
    decision it took back under ``undone``, and ``factcheck`` is the one that decision named."""
    shown = item.candidate((undone or decision).factcheck_id)
    data: dict[str, object] = {
        "decision": decision.to_dict(candidates=False),
        "post": {"id": item.post_id, "text": item.text, "lang": item.lang, "date": item.date,
                 "url": item.source_url},
        "factcheck": None if shown is None else shown.to_source(), "auto": decision.origin is Origin.AUTO}
    if decision.action is Action.UNDO:
        took_back = {} if undone is None else undone.to_source()
        data["undone"] = {k: took_back.get(k) for k in UNDONE_FIELDS}
    return data


def notifier(webhooks: Webhooks, send: Callable[[str], object]) -> Callable[..., list[str]]:
    """What ``ReviewDesk`` calls after recording decisions (with the items they left and, for
    each undo's id, the decision it took back): plans each event for every subscription that
    wants it (deduplicated on the decision id) and sends it to the workers."""
    from plugin.events import wants

    def notify(tenant: str, decisions: list[Decision], items: Mapping[str, ReviewItem],
               undone: Mapping[str, Decision] | None = None) -> list[str]:
        planned: list[str] = []
        wanted = [(d, Event(EVENTS[d.action])) for d in decisions if d.action in EVENTS]
        if not wanted:
            return planned
        subscriptions = webhooks.all(tenant)
        for decision, event in wanted:
            item = items[decision.post_id]
            for sub in subscriptions:
                if wants(sub, event, item.lang, None):
                    data = event_data(decision, item, (undone or {}).get(decision.id))
                    did = webhooks.plan(sub, event, data, dedupe_key=decision.id)
                    send(did)
                    planned.append(did)
        return planned

    return notify
