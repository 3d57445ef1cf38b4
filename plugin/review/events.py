"""The webhooks a recorded decision sends: ``match.confirmed`` for a confirm or manual match,
``match.rejected`` for a reject or "none of these" (``model.EVENTS``), to the tenant's
subscriptions whose languages include the post's, planned and sent like ``post.matched``."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from plugin.review.model import EVENTS, Action


def event_data(decision: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    """A decision event's ``data``: the decision (without the candidate snapshot), the post, and
    the fact-check it names as the item showed it (``None`` for a manual or a reject of all)."""
    fc = decision.get("factcheck_id")
    shown = next((c for c in item.get("candidates") or () if c["factcheck_id"] == fc), None)
    return {"decision": {k: v for k, v in decision.items() if k != "candidates"},
            "post": {"id": item["post_id"], "text": item.get("text"), "lang": item.get("lang"),
                     "date": item.get("date"), "url": item.get("source_url")},
            "factcheck": shown, "auto": decision.get("origin") == "auto"}


def notifier(webhooks: Any, send: Callable[[str], Any]) -> Callable[..., list[str]]:
    """What ``ReviewDesk`` calls after recording decisions: plans each event for every
    subscription that wants it (deduplicated on the decision id) and sends it to the workers."""
    from plugin.service.webhooks import Event, wants

    def notify(tenant: str, decisions: list[dict[str, Any]], items: dict[str, dict[str, Any]]) -> list[str]:
        planned = []
        wanted = [(d, Event(EVENTS[Action(d["action"])])) for d in decisions
                  if Action(d["action"]) in EVENTS]
        if not wanted:
            return planned
        subscriptions = webhooks.all(tenant)
        for decision, event in wanted:
            item = items[decision["post_id"]]
            for sub in subscriptions:
                if wants(sub, event, item.get("lang"), None):
                    did = webhooks.plan(sub, event, event_data(decision, item), dedupe_key=decision["id"])
                    send(did)
                    planned.append(did)
        return planned

    return notify
