"""The tipline's conversation, over the stores: the one place each step of it is decided.

- ``received`` (the API's inbound routes, after the channel's secret or signature passed): each
  update once; a message becomes a post job on the one post path (``/v1/posts``'s: language, OCR
  and hash for a photo, the tenant's learning, its claim), "/stop" forgets the user, "helped" /
  "did not help" is the request's outcome and a decision of origin ``tipline`` on the post
  (``ReviewDesk.record_feedback``; "did not help" also puts the user in the desk's queue).
- ``after_match`` (the post job, once the message's post was matched and joined its claim):
  **sure** (``plugin.channels.answer`` at ``threshold_of``'s threshold, or the desk already
  answered the post or its claim)
  answers with at most 3 fact-checks and asks whether it helped; otherwise the user is told the
  desk will look into it and waits on the claim.
- ``answer_claim`` (a worker, when the review desk confirmed a fact-check for a post:
  ``plugin.service.desk_answers``): everyone waiting on the post's claim gets it, once each, on the
  channel they used; on WhatsApp outside the 24-hour window with the channel's template, or not
  at all without one.
- ``time_out`` (the workers' sweeper): an answer's "did it help?" unanswered too long is a
  ``timeout``.

Messages go through the outbox (``plugin.channels.outbox``), sent by the workers' task under ids
made from what they answer, so a retried job or update sends nothing twice.
"""
from __future__ import annotations

import base64
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from plugin.channels import messages, strings
from plugin.channels.answer import Reply, decide, default_rule
from plugin.channels.records import Action, Channel, Inbound, Kind, Outcome, Outgoing
from plugin.models import post_doc_id
from plugin.search.result import Match

if TYPE_CHECKING:
    from plugin.image.model import ImageAnalysis
    from plugin.service.services import Services

#: a message's post id: the channel's kind, the channel, the update's key
PREFIX = {Kind.TELEGRAM: "tg", Kind.WHATSAPP: "wa"}
Send = Callable[[str], Any]


def words(services: Services) -> dict[str, Any]:
    return strings.load(services.settings.tipline_strings_path)


def _plan(services: Services, send: Send, channel: Channel, chat: str, user: str, out: Outgoing | None,
          dedupe: str) -> str | None:
    if out is None or not chat:
        return None
    mid = services.channels.plan(channel, chat, user, out, dedupe)
    if mid is not None:
        send(mid)
    return mid


def received(services: Services, channel: Channel, updates: list[Inbound], *, enqueue_job: Send,
             send: Send) -> dict[str, int]:
    """Act on a channel's updates (see the module's docstring); ``{"taken", "repeated"}``."""
    store, said = services.channels, words(services)
    taken = repeated = 0
    for inb in updates:
        if not store.first_time(channel, inb.key):
            repeated += 1
            continue
        taken += 1
        user = channel.user_key(inb.user)
        lang = strings.language(said, channel.tenant, inb.lang, channel.default_lang)
        if inb.action is Action.STOP:
            store.stop(channel, user)
            _plan(services, send, channel, inb.user, user, messages.plain(said, channel.tenant, lang, "stopped"),
                  f"stop:{inb.key}")
            continue
        store.touch(channel, inb.user, inb.at or time.time(), inb.lang)
        if inb.action in (Action.START, Action.UNSUPPORTED):  # the greeting, or what the tipline reads
            what = "greeting" if inb.action is Action.START else "unsupported"
            _plan(services, send, channel, inb.user, user, messages.plain(said, channel.tenant, lang, what),
                  f"{what}:{inb.key}")
            store.release(channel, user)
        elif inb.action is Action.FEEDBACK:
            _feedback(services, send, channel, inb, user, lang)
        else:
            _message(services, channel, inb, user, lang, enqueue_job, send)
    return {"taken": taken, "repeated": repeated}


def _feedback(services: Services, send: Send, channel: Channel, inb: Inbound, user: str, lang: str) -> None:
    store, said = services.channels, words(services)
    post_id = inb.post_id or ""
    store.replied(channel, post_id, user)
    store.outcome(channel, post_id, user, Outcome.RELEVANT if inb.helped else Outcome.IRRELEVANT)
    # a decision of the public's, beside the desk's (the learning weighs it below theirs)
    services.review.record_feedback(channel.tenant, post_id, bool(inb.helped), store.sent_for(channel, post_id),
                                    actor=f"tipline:{user[:12]}")
    if inb.helped:
        _plan(services, send, channel, inb.user, user, messages.plain(said, channel.tenant, lang, "thanks"),
              f"thanks:{post_id}")
        store.release(channel, user)
        return
    claim_id = services.claims.joined_before(channel.tenant, post_doc_id(channel.tenant, post_id))
    if claim_id is not None:  # the desk looks into it; the user waits on the claim
        store.ask(channel, user, channel.tenant, claim_id, post_id, lang)
    _plan(services, send, channel, inb.user, user, messages.plain(said, channel.tenant, lang, "desk_will_look"),
          f"unhelpful:{post_id}")


def _message(services: Services, channel: Channel, inb: Inbound, user: str, lang: str, enqueue_job: Send,
             send: Send) -> None:
    post: dict[str, Any] = {"id": f"{PREFIX[channel.kind]}-{channel.id}-{inb.key}", "text": inb.text[:10_000]}
    if inb.at:
        post["date"] = datetime.fromtimestamp(inb.at, tz=timezone.utc).date().isoformat()
    if inb.media:  # a photo takes seconds to read: say so at once (queued before the job)
        _plan(services, send, channel, inb.user, user, messages.plain(words(services), channel.tenant, lang, "checking"),
              f"checking:{post['id']}")
    extra = {"channel": {"id": channel.id, "user": user, "media": inb.media, "forwarded": inb.forwarded}}
    job, created = services.jobs.submit_post(post, channel.tenant, extra=extra)
    if created:
        enqueue_job(job["id"])


def channel_image(services: Services, job: Mapping[str, Any]) -> ImageAnalysis | None:
    """A message's photo, fetched from its channel and read by the image stage (in the worker)."""
    from plugin.channels.outbox import media
    from plugin.image.inputs import analyse_input

    ref = (job["input"].get("channel") or {})
    channel = services.channels.find(str(ref.get("id") or ""))
    if channel is None or not ref.get("media"):
        return None
    data = media(services.settings, channel, str(ref["media"]))
    return analyse_input({"image": base64.b64encode(data).decode()}, services.settings)


def threshold_of(channel: Channel, tier: float | None) -> tuple[float, str]:
    """The confidence a channel answers from, and whose it is: the channel's own, else the
    tenant's auto-confirm tier (measured on its own decisions: ``plugin.learn.tier``), else
    ``tipline.json``'s."""
    if channel.threshold is not None:
        return channel.threshold, "channel"
    if tier is not None:
        return tier, "tenant_tier"
    return default_rule().threshold, "default"


def sure_reply(found: Match, threshold: float) -> Reply:
    """``decide`` at ``threshold``."""
    return decide(found, replace(default_rule(), threshold=threshold))


def after_match(services: Services, job: Mapping[str, Any], found: Match, claim_id: str, send: Send
                ) -> dict[str, Any] | None:
    """The reply to a message once its post was matched and joined ``claim_id`` (see the
    module's docstring); what the job's result records of it."""
    ref = job["input"].get("channel") or {}
    channel = services.channels.find(str(ref.get("id") or ""))
    if channel is None:
        return None
    store, said, user = services.channels, words(services), str(ref.get("user") or "")
    who = store.user(channel, user)
    if who.get("stopped") == "1" or not who.get("chat"):
        return {"channel": channel.id, "reply": None, "why": "the user stopped"}
    post_id = job["input"]["post"]["id"]
    # the user's own language (their app's, on Telegram) before the message's: a forwarded
    # English rumour asked about in Spanish is answered in Spanish
    lang = strings.language(said, channel.tenant, who.get("lang") or found.lang, channel.default_lang)
    tier = ((services.recalibrations.get(channel.tenant) or {}).get("tier") or {}).get("threshold")
    threshold, whose = threshold_of(channel, tier)
    reply = sure_reply(found, threshold)
    if reply.sure:
        fcs = [{**c.fields, "id": c.id} for c in reply.factchecks]
        mid = _plan(services, send, channel, who["chat"], user, messages.answer(said, channel.tenant, lang, fcs, post_id),
                    f"answer:{post_id}")
        store.outcome(channel, post_id, user, Outcome.ANSWERED, factchecks=[c.id for c in reply.factchecks])
        store.awaiting(channel, post_id, user)
        store.answered_with(channel, post_id, [c.id for c in reply.factchecks])
        store.release(channel, user)
        return {"channel": channel.id, "reply": "answered", "factchecks": [c.id for c in reply.factchecks],
                "threshold": threshold, "threshold_of": whose, "message": mid}
    store.ask(channel, user, channel.tenant, claim_id, post_id, lang)
    mid = _plan(services, send, channel, who["chat"], user, messages.plain(said, channel.tenant, lang, "desk_will_look"),
                f"queued:{post_id}")
    store.outcome(channel, post_id, user, Outcome.NO_RESULT if reply.reason == "no_match" else Outcome.QUEUED)
    return {"channel": channel.id, "reply": "queued", "why": reply.reason, "threshold": threshold,
            "threshold_of": whose, "message": mid}


def answer_claim(services: Services, tenant: str, claim_id: str, factcheck: Mapping[str, Any], send: Send) -> int:
    """Send the desk's fact-check to everyone waiting on ``claim_id`` (once each); how many."""
    store, said, sent, now = services.channels, words(services), 0, time.time()
    for ask in store.asks(tenant, claim_id):
        channel = store.find(ask["channel"])
        who = store.user(channel, ask["user"]) if channel is not None else {}
        if channel is None or who.get("stopped") == "1" or not who.get("chat"):
            store.answered(tenant, claim_id, ask)
            continue
        last = float(who["last_in"]) if who.get("last_in") else None
        out = messages.desk_answer(said, channel, ask["lang"], factcheck, ask["post_id"],
                                   messages.window_open(channel, last, now))
        mid = _plan(services, send, channel, who["chat"], ask["user"], out, f"desk:{claim_id}:{factcheck.get('id')}")
        store.answered_with(channel, ask["post_id"], [str(factcheck.get("id"))])
        store.answered(tenant, claim_id, ask)
        store.outcome(channel, ask["post_id"], ask["user"], Outcome.DESK_ANSWERED, factcheck=factcheck.get("id"),
                      sent=mid is not None, **({} if out is not None else {"why": "outside the 24-hour window, no template"}))
        if mid is not None and out is not None and out.buttons:  # it asked "did it help?"
            store.awaiting(channel, ask["post_id"], ask["user"])
        store.release(channel, ask["user"])
        sent += mid is not None
    return sent


def time_out(services: Services, older_than_s: float) -> int:
    """Record ``timeout`` for every answer whose "did it help?" went unanswered for
    ``older_than_s`` (Meedan Check's outcome; nothing is sent); how many. The workers' sweeper
    calls it."""
    store, n = services.channels, 0
    for channel in store.list(None):
        for post_id, user in store.timeouts(channel, older_than_s):
            store.outcome(channel, post_id, user, Outcome.TIMEOUT, after_s=older_than_s)
            n += 1
    return n
