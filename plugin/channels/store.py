"""The tipline's state in Redis (through ``plugin.kv``): channels with their secrets, users (as
keyed hashes; a raw chat id or phone number only while a reply is owed to it), who asked about
which claim, updates already taken (a retried update is processed once), each request's outcome,
and the outbox of messages to send.

Keys under the deployment's prefix: ``channel:<id>``, ``channels``; ``tipuser:<channel>:<user>``,
``tipusers:<channel>`` (its users' keys, which removing the channel forgets);
``tipasks:<tenant>:<claim>``, ``tipasked:<channel>:<user>``; ``tipseen:<channel>:<key>``;
``tipevents:<channel>``; ``tipsent:<channel>:<post>``; ``tipawait:<channel>`` (answers whose
"did it help?" is open, by when it was asked); ``tipout:<id>``.
"""
from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from plugin.channels.records import REQUIRED, Channel, Kind, Outcome, Outgoing
from plugin.errors import BadInput, InvalidRequest, NotFound
from plugin.kv import KV

#: what ``create`` makes: an id is checked against it before it names a Redis key
CHANNEL_ID = re.compile(r"ch_[0-9a-f]{16}")
#: an update is remembered this long (Telegram and Meta retry for hours, not weeks)
SEEN_TTL_S = 7 * 24 * 3600
#: request outcomes kept per channel (the newest)
MAX_EVENTS = 10_000
#: a planned message is kept this long, sent or not
OUTBOX_TTL_S = 7 * 24 * 3600


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class ChannelStore:
    def __init__(self, kv: KV, *, clock: Any = time.time) -> None:
        self.kv = kv
        self.clock = clock

    # -- channels ----------------------------------------------------------------------------------
    def create(self, kind: str, tenant: str, name: str, fields: Mapping[str, Any]) -> tuple[Channel, dict[str, str]]:
        """A new channel; returns it and the secrets FactSieve made for it (Telegram's webhook
        ``secret_token``, WhatsApp's ``verify_token``), shown this once."""
        try:
            k = Kind(kind)
        except ValueError:
            raise InvalidRequest(f"kind: {kind[:40]!r} is not telegram or whatsapp", errors=[
                {"field": "kind", "message": "not telegram or whatsapp", "type": "enum"}]) from None
        missing = [f for f in REQUIRED[k] if not str(fields.get(f) or "").strip()]
        if missing:
            raise InvalidRequest(f"a {k.value} channel needs {', '.join(missing)}", errors=[
                {"field": f, "message": "required", "type": "missing"} for f in missing])
        name = name.strip()
        if not 1 <= len(name) <= 200 or any(ord(c) < 32 for c in name):
            raise BadInput("a channel needs a name of 1 to 200 characters, without control characters")
        made = ({"secret_token": secrets.token_urlsafe(32)} if k is Kind.TELEGRAM
                else {"verify_token": secrets.token_urlsafe(24)})
        given = {f: str(fields[f]).strip() for f in ("bot_token", "access_token", "app_secret") if fields.get(f)}
        template = fields.get("template")
        if template is not None and (not isinstance(template, Mapping) or not template.get("name")):
            raise BadInput("template: {\"name\": ..., \"lang\": ...} (a pre-approved WhatsApp template)")
        threshold = fields.get("threshold")
        if threshold is not None and not (isinstance(threshold, (int, float)) and 0 <= threshold <= 1):
            raise BadInput("threshold: a number from 0 to 1")
        ch = Channel(id="ch_" + secrets.token_hex(8), tenant=tenant, kind=k, name=name, created_at=now_iso(),
                     threshold=None if threshold is None else float(threshold),
                     default_lang=str(fields.get("default_lang") or "en")[:10],
                     template=dict(template) if template else None,
                     phone_number_id=str(fields.get("phone_number_id") or "").strip() or None,
                     secrets={**given, **made}, user_salt=secrets.token_hex(16))
        pipe = self.kv.client.pipeline()
        pipe.set(self.kv.key("channel", ch.id), json.dumps(ch.to_source()))
        pipe.sadd(self.kv.key("channels"), ch.id)
        self.kv.call("create channel", pipe.execute)
        return ch, made

    def find(self, channel_id: str) -> Channel | None:
        if not CHANNEL_ID.fullmatch(channel_id):
            return None
        raw = self.kv.call("read channel", self.kv.client.get, self.kv.key("channel", channel_id))
        return Channel.from_source(json.loads(raw)) if raw else None

    def get(self, channel_id: str, tenant: str | None) -> Channel:
        """The channel, if ``tenant`` (``None``: an admin of all) may see it, else ``NotFound``."""
        ch = self.find(channel_id)
        if ch is None or (tenant is not None and ch.tenant != tenant):
            raise NotFound(f"no channel with id {channel_id[:80]!r}")
        return ch

    def list(self, tenant: str | None) -> list[Channel]:
        ids = sorted(self.kv.call("list channels", self.kv.client.smembers, self.kv.key("channels")))
        found = [self.find(i) for i in ids]
        return [c for c in found if c is not None and (tenant is None or c.tenant == tenant)]

    def remove(self, channel_id: str, tenant: str | None) -> None:
        """Remove the channel and forget its users (no reply can be owed through it any more: their
        raw ids go), its outcomes and its open "did it help?"s; a cost of one delete per user, in
        batches. Its queued messages fail when their turn comes ("channel removed")."""
        ch = self.get(channel_id, tenant)
        pipe = self.kv.client.pipeline()
        pipe.delete(self.kv.key("channel", ch.id))
        pipe.srem(self.kv.key("channels"), ch.id)
        self.kv.call("remove channel", pipe.execute)
        users = self.kv.key("tipusers", ch.id)
        while batch := self.kv.call("read channel users", self.kv.client.spop, users, 1000):
            self.kv.call("forget channel users", self.kv.client.delete,
                         *(self.kv.key("tipuser", ch.id, u) for u in batch), *(self.kv.key("tipasked", ch.id, u) for u in batch))
        self.kv.call("forget channel", self.kv.client.delete, self.kv.key("tipevents", ch.id),
                     self.kv.key("tipawait", ch.id), users)

    # -- updates, users, asks ------------------------------------------------------------------------
    def first_time(self, channel: Channel, key: str) -> bool:
        """Whether this update is new (True once per key: a retried update is False)."""
        return bool(self.kv.call("mark update", self.kv.client.set, self.kv.key("tipseen", channel.id, key), "1",
                                 nx=True, ex=SEEN_TTL_S))

    def touch(self, channel: Channel, raw_user: str, at: float, lang: str | None) -> str:
        """A message from a user: their last message time (WhatsApp's window), language, and the
        raw id (a reply is owed now); a stopped user who writes again is back. Their key."""
        user = channel.user_key(raw_user)
        fields = {"chat": raw_user, "last_in": str(at or self.clock()), "stopped": "0"}
        if lang:
            fields["lang"] = lang[:10]
        pipe = self.kv.client.pipeline()
        pipe.hset(self.kv.key("tipuser", channel.id, user), mapping=fields)
        pipe.sadd(self.kv.key("tipusers", channel.id), user)  # what removing the channel forgets
        self.kv.call("touch tipline user", pipe.execute)
        return user

    def user(self, channel: Channel, user: str) -> dict[str, str]:
        return self.kv.call("read tipline user", self.kv.client.hgetall, self.kv.key("tipuser", channel.id, user))

    def ask(self, channel: Channel, user: str, tenant: str, claim_id: str, post_id: str, lang: str) -> None:
        """The user waits for the desk's answer on ``claim_id``."""
        entry = json.dumps({"channel": channel.id, "user": user, "post_id": post_id, "lang": lang, "at": self.clock()})
        pipe = self.kv.client.pipeline()
        pipe.hset(self.kv.key("tipasks", tenant, claim_id), f"{channel.id}:{user}", entry)
        pipe.sadd(self.kv.key("tipasked", channel.id, user), f"{tenant}\x1f{claim_id}")
        self.kv.call("record ask", pipe.execute)

    def waiting(self, tenant: str, claim_id: str) -> int:
        """How many users wait on the claim."""
        return int(self.kv.call("count asks", self.kv.client.hlen, self.kv.key("tipasks", tenant, claim_id)))

    def asks(self, tenant: str, claim_id: str) -> list[dict[str, Any]]:
        """Who waits on the claim (one entry per user)."""
        got = self.kv.call("read asks", self.kv.client.hgetall, self.kv.key("tipasks", tenant, claim_id))
        return [json.loads(raw) for raw in (got or {}).values()]

    def answered(self, tenant: str, claim_id: str, ask: Mapping[str, Any]) -> None:
        """The user no longer waits on the claim (answered: after their message was planned, so a
        worker dying between the two answers them on the retry, planned once)."""
        pipe = self.kv.client.pipeline()
        pipe.hdel(self.kv.key("tipasks", tenant, claim_id), f"{ask['channel']}:{ask['user']}")
        pipe.srem(self.kv.key("tipasked", ask["channel"], ask["user"]), f"{tenant}\x1f{claim_id}")
        self.kv.call("answer ask", pipe.execute)

    def release(self, channel: Channel, user: str) -> None:
        """Forget the raw id once no reply is owed (no open ask)."""
        if not self.kv.call("count asks", self.kv.client.scard, self.kv.key("tipasked", channel.id, user)):
            self.kv.call("forget raw id", self.kv.client.hdel, self.kv.key("tipuser", channel.id, user), "chat")

    def stop(self, channel: Channel, user: str) -> None:
        """No more messages: the user is marked stopped, their open asks dropped and their raw id
        forgotten (only the keyed hash stays, with the stop)."""
        asked = self.kv.call("read asks", self.kv.client.smembers, self.kv.key("tipasked", channel.id, user))
        pipe = self.kv.client.pipeline()
        for entry in asked:
            tenant, claim_id = entry.split("\x1f", 1)
            pipe.hdel(self.kv.key("tipasks", tenant, claim_id), f"{channel.id}:{user}")
        pipe.delete(self.kv.key("tipasked", channel.id, user))
        pipe.hdel(self.kv.key("tipuser", channel.id, user), "chat", "lang")
        pipe.hset(self.kv.key("tipuser", channel.id, user), mapping={"stopped": "1", "stopped_at": repr(self.clock())})
        self.kv.call("stop tipline user", pipe.execute)

    def stopped_since(self, channel: Channel, user: str, planned_at: float) -> bool:
        """Whether the user stopped after a message to them was planned at ``planned_at`` (it is
        then never sent; the stop's own confirmation is planned after it)."""
        who = self.user(channel, user)
        return who.get("stopped") == "1" and float(who.get("stopped_at") or 0) > planned_at

    def outcome(self, channel: Channel, post_id: str, user: str, outcome: Outcome, **extra: Any) -> None:
        """A request's outcome, as an event of the channel (newest first, the last ``MAX_EVENTS``)."""
        event = json.dumps({"post_id": post_id, "user": user, "outcome": Outcome(outcome).value, "at": now_iso(),
                            **extra})
        pipe = self.kv.client.pipeline()
        pipe.lpush(self.kv.key("tipevents", channel.id), event)
        pipe.ltrim(self.kv.key("tipevents", channel.id), 0, MAX_EVENTS - 1)
        self.kv.call("record outcome", pipe.execute)

    def answered_with(self, channel: Channel, post_id: str, factcheck_ids: list[str]) -> None:
        """The fact-checks a post's user was sent (what their "helped" is about)."""
        self.kv.call("record sent", self.kv.client.set, self.kv.key("tipsent", channel.id, post_id),
                     json.dumps(factcheck_ids), ex=SEEN_TTL_S)

    def sent_for(self, channel: Channel, post_id: str) -> list[str]:
        raw = self.kv.call("read sent", self.kv.client.get, self.kv.key("tipsent", channel.id, post_id))
        return list(json.loads(raw)) if raw else []

    def awaiting(self, channel: Channel, post_id: str, user: str) -> None:
        """The user was asked whether the answer to ``post_id`` helped (``timeouts``)."""
        self.kv.call("await feedback", self.kv.client.zadd, self.kv.key("tipawait", channel.id),
                     {f"{post_id}\x1f{user}": self.clock()})

    def replied(self, channel: Channel, post_id: str, user: str) -> None:
        """The user said whether the answer to ``post_id`` helped: it is awaited no more."""
        self.kv.call("feedback came", self.kv.client.zrem, self.kv.key("tipawait", channel.id), f"{post_id}\x1f{user}")

    def timeouts(self, channel: Channel, older_than_s: float, limit: int = 1000) -> list[tuple[str, str]]:
        """``(post_id, user)`` of answers whose "did it help?" went unanswered for ``older_than_s``,
        at most ``limit``, taken off the list (each is returned to one caller only)."""
        key = self.kv.key("tipawait", channel.id)
        due = self.kv.call("read awaited", self.kv.client.zrangebyscore, key, "-inf", self.clock() - older_than_s,
                           start=0, num=limit)
        out = []
        for member in due:
            if self.kv.call("time out", self.kv.client.zrem, key, member):  # 0: another sweeper took it
                post_id, user = member.split("\x1f", 1)
                out.append((post_id, user))
        return out

    def events(self, channel: Channel, limit: int = 100) -> list[dict[str, Any]]:
        raw = self.kv.call("read outcomes", self.kv.client.lrange, self.kv.key("tipevents", channel.id), 0, limit - 1)
        return [json.loads(r) for r in raw]

    # -- the outbox -------------------------------------------------------------------------------------
    def plan(self, channel: Channel, chat: str, user: str, out: Outgoing, dedupe: str) -> str | None:
        """A message to send, under an id made from what it is for (planning it twice is one
        message); ``None`` when it was planned before."""
        mid = "tmsg_" + hashlib.sha256(f"{channel.id}\x1f{user}\x1f{dedupe}".encode()).hexdigest()[:24]
        item = {"id": mid, "channel": channel.id, "chat": chat, "user": user, "created_at": now_iso(),
                "planned_at": self.clock(),
                "text": out.text, "buttons": [[b.id, b.title] for b in out.buttons], "template": out.template,
                "status": "pending", "attempts": 0}
        made = self.kv.call("plan message", self.kv.client.set, self.kv.key("tipout", mid), json.dumps(item),
                            nx=True, ex=OUTBOX_TTL_S)
        return mid if made else None

    def item(self, mid: str) -> dict[str, Any] | None:
        raw = self.kv.call("read message", self.kv.client.get, self.kv.key("tipout", mid))
        return json.loads(raw) if raw else None

    def save(self, item: dict[str, Any]) -> None:
        self.kv.call("save message", self.kv.client.set, self.kv.key("tipout", item["id"]), json.dumps(item),
                     ex=OUTBOX_TTL_S)
