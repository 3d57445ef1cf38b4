"""The webhooks a recorded decision sends: ``match.confirmed`` for a confirm or manual match,
``match.rejected`` for a reject or "none of these", ``match.undone`` for an undo
(``model.EVENTS``), to the tenant's subscriptions whose languages include the post's, planned
and sent like ``post.matched``."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from plugin.review.model import EVENTS, Action


#: what ``match.undone`` tells of the decision an undo took back
UNDONE_FIELDS = ("id", "action", "factcheck_id", "actor", "at", "origin")


def event_data(decision: dict[str, Any], item: dict[str, Any],
               undone: dict[str, Any] | None = None) -> dict[str, Any]:
    """A decision event's ``data``: the decision (without the candidate snapshot), the post, and
    the fact-check it names as the item showed it (``None`` for a manual or a reject of all).
    An undo (``decision``, whose ``actor`` is who undid) names the decision it took back under
    ``undone``, and ``factcheck`` is the one that decision named."""
    fc = (undone or decision).get("factcheck_id")
    shown = next((c for c in item.get("candidates") or () if c["factcheck_id"] == fc), None)
    data = {"decision": {k: v for k, v in decision.items() if k != "candidates"},
            "post": {"id": item["post_id"], "text": item.get("text"), "lang": item.get("lang"),
                     "date": item.get("date"), "url": item.get("source_url")},
            "factcheck": shown, "auto": decision.get("origin") == "auto"}
    if decision.get("action") == Action.UNDO.value:
        data["undone"] = {k: (undone or {}).get(k) for k in UNDONE_FIELDS}
    return data


def notifier(webhooks: Any, send: Callable[[str], Any]) -> Callable[..., list[str]]:
    """What ``ReviewDesk`` calls after recording decisions (with the items they left and, for
    each undo's id, the decision it took back): plans each event for every subscription that
    wants it (deduplicated on the decision id) and sends it to the workers."""
    from plugin.events import Event, wants

    def notify(tenant: str, decisions: list[dict[str, Any]], items: dict[str, dict[str, Any]],
               undone: dict[str, dict[str, Any]] | None = None) -> list[str]:
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
                    data = event_data(decision, item, (undone or {}).get(decision["id"]))
                    did = webhooks.plan(sub, event, data, dedupe_key=decision["id"])
                    send(did)
                    planned.append(did)
        return planned

    return notify
