"""The desk's answer to the tipline's askers: what the review desk calls after it recorded
decisions (``plugin.review.events.notifier``'s signature, wired beside the webhooks' notifier in
``Services.review``). Apart from ``plugin.service.tipline`` so that the services, which wire it,
and the conversation, which takes the services, do not import each other."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from plugin.channels import messages
from plugin.models import post_doc_id

if TYPE_CHECKING:
    from plugin.channels.store import ChannelStore
    from plugin.claims.store import ClaimStore
    from plugin.learn.memory_store import PostMemory
    from plugin.review.records import Decision, ReviewItem


class AskerParts(Protocol):
    """What the notifier reads (``Services`` has them, built when first used)."""

    @property
    def claims(self) -> ClaimStore: ...

    @property
    def channels(self) -> ChannelStore: ...

    @property
    def posts(self) -> PostMemory: ...


def desk_notifier(services: AskerParts, answer: Callable[[str, str, dict[str, Any]], Any]) -> Callable[..., list[str]]:
    """What the review desk calls after recording decisions (``plugin.review.events.notifier``'s
    signature): each confirmed fact-check answers the askers of its post's claim, by a worker
    (``answer``: ``Services.queue_answers``; a claim may have thousands of askers, and the desk's
    request does one read per decision, never a message)."""
    from plugin.review.records import Action as DecisionAction

    def notify(tenant: str, decisions: list[Decision], items: Mapping[str, ReviewItem],
               undone: Mapping[str, Decision] | None = None) -> list[str]:
        confirmed = [d for d in decisions if d.action in (DecisionAction.CONFIRM, DecisionAction.MANUAL)
                     and d.factcheck_id]
        if not confirmed:
            return []
        # one read for the whole batch (a claim's decision brings up to 2,000), then one answer
        # per claim and fact-check, where someone waits
        claim_of = services.claims.claims_of(tenant, [post_doc_id(tenant, d.post_id) for d in confirmed])
        done: set[tuple[str, str]] = set()
        for d in confirmed:
            claim_id = claim_of.get(post_doc_id(tenant, d.post_id))
            if claim_id is None or (claim_id, str(d.factcheck_id)) in done:
                continue
            done.add((claim_id, str(d.factcheck_id)))
            if not services.channels.waiting(tenant, claim_id):
                continue  # nobody asked: nothing to send (and no queue needed: the simulator, the CLI)
            shown = items[d.post_id].candidate(d.factcheck_id) if d.post_id in items else None
            fc = (shown.to_source() if shown is not None
                  else services.posts.factchecks([str(d.factcheck_id)]).get(str(d.factcheck_id)) or {})
            answer(tenant, claim_id, {**{k: fc.get(k) for k in messages.SHOWN}, "domain": fc.get("domain"),
                                      "id": d.factcheck_id})
        return []

    return notify
