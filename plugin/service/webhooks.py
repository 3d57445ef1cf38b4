"""Webhook subscriptions and signed, retried, logged deliveries.

Signing (headers, HMAC, rotation overlap) is ``plugin.service.signing``; the transport and the
address rules are ``plugin.net.outbound``. Deliveries are at least once: every attempt of one
delivery carries the same ``X-FactSieve-Delivery`` id, so a receiver can drop the rare duplicate
left by a worker killed between sending and recording.

URLs are checked when a subscription is created *and* before every attempt (DNS may change):
only http(s), no credentials, a port from 1 to 65535, and no loopback, private, link-local or
otherwise non-global address (IPv6 forms that embed such an IPv4 address included) unless the
URL's origin (scheme, host and port, exactly) is listed in ``FACTSIEVE_WEBHOOK_ALLOWED_HOSTS``;
never FactSieve's own OpenSearch, Redis or LLM endpoint, listed or not. The attempt then
connects to exactly the address that was checked, so a name with a zero TTL cannot pass the
check with one address and connect to another; the Host header, the TLS server name and the
certificate check still use the URL's host. Redirects are not followed (they could point anywhere).

Receivers are not trusted: one deadline covers connecting, sending and reading together, at
most ``MAX_RESPONSE_BYTES`` of a body are read (and never decompressed), and a receiver that is
too slow or breaks the protocol leaves a failed attempt that says why.
"""
from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from plugin.errors import BadInput, InvalidRequest, NotFound, scrub
from plugin.events import Event
from plugin.service.jobs import now_iso
from plugin.service.keys import DEFAULT_TENANT
from plugin.kv import KV
from plugin.net.outbound import (DeliveryError, Reply, Target, Unresolvable, backends_of, backoff_delay,
                                     check_target, check_url, parse_origins, post, resolve_host,
                                     resolve_within)
from plugin.service.signing import (SECRET_OVERLAP_S, check_secret, delivery_headers, rotated,
                                    signature_header, signing_secrets)
from plugin.settings import Settings


#: Subscriptions one owner (a tenant) may hold (the whole deployment, for subscriptions without one).
MAX_SUBSCRIPTIONS_PER_OWNER = 100


# -- pure functions ---------------------------------------------------------------------------


def capacity_error(owner: str | None, held: int, cap: int) -> InvalidRequest | None:
    """The error for an owner that would hold ``held`` subscriptions, if that is over ``cap``.

    An ``InvalidRequest`` (422, as GitHub answers over its hook limit): a ``BadInput`` that the
    API's create route passes through as is instead of blaming the URL."""
    if held <= cap:
        return None
    who = f"owner {owner!r}" if owner is not None else "this deployment"
    message = (f"{who} already has {cap} webhook subscriptions, the most allowed; delete one "
               "before creating another")
    return InvalidRequest(message, errors=[{"field": "(body)", "message": message,
                                            "type": "subscription_limit"}])


def delivery_id(subscription_id: str, event: Event, dedupe_key: str) -> str:
    """Deterministic: planning one delivery twice (a redelivered task) is a no-op."""
    digest = hashlib.sha256(f"{subscription_id}\x1f{event.value}\x1f{dedupe_key}".encode()).hexdigest()
    return "dlv_" + digest[:24]


# -- state in Redis ------------------------------------------------------------------------------
class DeliveryStatus(str, Enum):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


@dataclass(frozen=True)
class Outcome:
    """What one delivery attempt left to do: nothing (``retry_in`` None) or try again later."""

    status: DeliveryStatus
    retry_in: float | None = None


_PUBLIC_FIELDS = ("id", "url", "events", "languages", "min_score", "created_at")


def belongs(subscription: dict[str, Any], tenant: str | None) -> bool:
    """Whether a key that sees ``tenant`` (``None``: all, an admin) may see this subscription;
    one made before tenants existed belongs to the default tenant."""
    return tenant is None or subscription.get("owner", DEFAULT_TENANT) == tenant


def public(subscription: dict[str, Any]) -> dict[str, Any]:
    """A subscription as the API shows it: never with its secret."""
    return {k: subscription.get(k) for k in _PUBLIC_FIELDS}


#: ``(target, body, headers, deadline_s=…) -> Reply``, raising ``DeliveryError``: ``post``.
Transport = Callable[..., Reply]


class WebhookStore:
    def __init__(self, kv: KV, settings: Settings, transport: Transport | None = None, *,
                 resolve: Callable[[str], list[str]] = resolve_host) -> None:
        self.kv = kv
        self.settings = settings
        self.allowed = parse_origins(settings.webhook_allowed_hosts)
        self.backends = backends_of(settings.backend_urls)
        self.transport: Transport = transport or post
        self.resolve = resolve

    # -- subscriptions ----------------------------------------------------------------------------
    def _owner_set(self, owner: str | None) -> str:
        """The set an owner's subscription ids are counted in; without an owner, every
        subscription of the deployment (those created before owners existed included)."""
        return self.kv.key("webhook-owner", owner) if owner is not None else self.kv.key("webhook-ids")

    def create(self, url: str, events: list[Event], languages: list[str] | None = None,
               min_score: float | None = None, secret: str | None = None, *,
               owner: str | None = None) -> dict[str, Any]:
        """Store a subscription; returns it *with* its secret (the only time it is shown).

        At most ``MAX_SUBSCRIPTIONS_PER_OWNER`` per owner: the id joins the owner's set first and
        leaves it again if that made too many, so two racing creates cannot both squeeze in."""
        check_url(url, self.allowed, self.resolve, self.backends)
        sub = {"id": "whk_" + secrets.token_hex(8), "url": url,
               "events": sorted({e.value for e in events}), "languages": languages,
               "min_score": min_score, "created_at": now_iso(),
               "secret": check_secret(secret) if secret is not None else secrets.token_urlsafe(32)}
        if owner is not None:
            sub["owner"] = owner
        slots = self._owner_set(owner)
        pipe = self.kv.client.pipeline()
        pipe.sadd(slots, sub["id"])
        pipe.scard(slots)
        held = self.kv.call("count webhooks", pipe.execute)[1]
        error = capacity_error(owner, held, MAX_SUBSCRIPTIONS_PER_OWNER)
        if error is not None:
            self.kv.call("release webhook slot", self.kv.client.srem, slots, sub["id"])
            raise error
        try:
            pipe = self.kv.client.pipeline()
            pipe.set(self.kv.key("webhook", sub["id"]), json.dumps(sub))
            pipe.sadd(self.kv.key("webhook-ids"), sub["id"])
            self.kv.call("create webhook", pipe.execute)
        except Exception:
            self.kv.call("release webhook slot", self.kv.client.srem, slots, sub["id"])
            raise
        return {**public(sub), "secret": sub["secret"]}

    def _load(self, sub_id: str) -> dict[str, Any]:
        raw = self.kv.call("read webhook", self.kv.client.get, self.kv.key("webhook", sub_id))
        if raw is None:
            raise NotFound(f"no webhook subscription with id {sub_id!r}")
        return json.loads(raw)

    def get(self, sub_id: str, tenant: str | None = None) -> dict[str, Any]:
        """The subscription without its secret; with ``tenant``, only that tenant's own (another
        tenant's id answers exactly as an unknown one)."""
        sub = self._load(sub_id)
        if not belongs(sub, tenant):
            raise NotFound(f"no webhook subscription with id {sub_id!r}")
        return public(sub)

    def all(self, tenant: str | None = None) -> list[dict[str, Any]]:
        """Every subscription (of ``tenant``, when given), secrets included (for the workers)."""
        return [s for s in self._all() if belongs(s, tenant)]

    def _all(self) -> list[dict[str, Any]]:
        ids = self.kv.call("list webhooks", self.kv.client.smembers, self.kv.key("webhook-ids"))
        if not ids:
            return []
        raws = self.kv.call("read webhooks", self.kv.client.mget,
                            [self.kv.key("webhook", i) for i in sorted(ids)])
        return sorted((json.loads(r) for r in raws if r), key=lambda s: s["created_at"])

    def list(self, tenant: str | None = None) -> list[dict[str, Any]]:
        return [public(s) for s in self.all(tenant)]

    def delete(self, sub_id: str) -> None:
        sub = self._load(sub_id)
        pipe = self.kv.client.pipeline()
        pipe.delete(self.kv.key("webhook", sub_id))
        pipe.srem(self.kv.key("webhook-ids"), sub_id)
        if sub.get("owner") is not None:
            pipe.srem(self._owner_set(sub["owner"]), sub_id)
        self.kv.call("delete webhook", pipe.execute)

    def rotate_secret(self, sub_id: str, *, secret: str | None = None,
                      overlap_s: float = SECRET_OVERLAP_S) -> dict[str, Any]:
        """Give the subscription a new secret (generated unless given) and return the
        subscription with it: the only time it is shown. Deliveries are signed with both the
        new and the old secret for ``overlap_s`` seconds (``signature_header``), so receivers
        can switch at their own pace within that time.

        Optimistic (``WATCH``): a concurrent rotation or delete makes this one start over, so
        the secret returned is the one stored, and a deleted subscription is not resurrected."""
        from redis.exceptions import WatchError

        new_secret = check_secret(secret) if secret is not None else secrets.token_urlsafe(32)
        key = self.kv.key("webhook", sub_id)

        def swap() -> dict[str, Any]:
            with self.kv.client.pipeline() as pipe:
                while True:
                    try:
                        pipe.watch(key)
                        raw = pipe.get(key)
                        if raw is None:
                            raise NotFound(f"no webhook subscription with id {sub_id!r}")
                        sub = rotated(json.loads(raw), new_secret, time.time(), overlap_s)
                        pipe.multi()
                        pipe.set(key, json.dumps(sub))
                        pipe.execute()
                        return sub
                    except WatchError:
                        continue

        sub = self.kv.call("rotate webhook secret", swap)
        out = {**public(sub), "secret": sub["secret"], "rotated_at": sub["rotated_at"]}
        if "previous_secret_expires_at" in sub:
            out["previous_secret_expires_at"] = sub["previous_secret_expires_at"]
        return out

    # -- deliveries -----------------------------------------------------------------------------
    def plan(self, subscription: dict[str, Any], event: Event, data: dict[str, Any],
             dedupe_key: str) -> str:
        """Record a pending delivery of ``data`` (idempotent per subscription, event and key)."""
        did = delivery_id(subscription["id"], event, dedupe_key)
        body = json.dumps({"id": did, "event": event.value, "subscription_id": subscription["id"],
                           "created_at": now_iso(), "data": data},
                          ensure_ascii=False, separators=(",", ":"), default=str)
        record = {"id": did, "subscription_id": subscription["id"], "event": event.value,
                  "ref": dedupe_key, "url": subscription["url"], "status": DeliveryStatus.PENDING.value,
                  "created_at": now_iso(), "attempts": [], "body": body}
        ttl = self.settings.job_ttl_s
        if self.kv.call("plan delivery", self.kv.client.set, self.kv.key("delivery", did),
                        json.dumps(record), ex=ttl, nx=True):
            log_key = self.kv.key("webhook", subscription["id"], "deliveries")
            pipe = self.kv.client.pipeline()
            pipe.zadd(log_key, {did: time.time()})
            pipe.expire(log_key, ttl)
            self.kv.call("log delivery", pipe.execute)
        return did

    def delivery(self, did: str) -> dict[str, Any]:
        raw = self.kv.call("read delivery", self.kv.client.get, self.kv.key("delivery", did))
        if raw is None:
            raise NotFound(f"no delivery with id {did!r}")
        return json.loads(raw)

    def deliveries(self, sub_id: str, limit: int = 50) -> list[dict[str, Any]]:
        """The subscription's delivery log, newest first, without bodies."""
        self._load(sub_id)
        ids = self.kv.call("read delivery log", self.kv.client.zrevrange,
                           self.kv.key("webhook", sub_id, "deliveries"), 0, limit - 1)
        if not ids:
            return []
        raws = self.kv.call("read deliveries", self.kv.client.mget,
                            [self.kv.key("delivery", i) for i in ids])
        out = []
        for raw in raws:
            if raw:
                rec = json.loads(raw)
                rec.pop("body", None)
                out.append(rec)
        return out

    def attempt(self, did: str) -> Outcome:
        """Send one attempt of a delivery, record it, and say whether to try again (and when).

        A delivered or failed delivery is left alone, so a redelivered task sends nothing twice.
        A short Redis lock keeps two workers from sending the same delivery at once; it outlasts
        the attempt's deadline (``webhook_timeout_s`` covers connecting, sending and reading).
        """
        rec = self.delivery(did)
        if rec["status"] != DeliveryStatus.PENDING.value:
            return Outcome(DeliveryStatus(rec["status"]))
        lock = self.kv.key("delivery", did, "lock")
        hold_ms = int((self.settings.webhook_timeout_s + 5) * 1000)
        if not self.kv.call("lock delivery", self.kv.client.set, lock, "1", px=hold_ms, nx=True):
            left = self.kv.call("lock ttl", self.kv.client.pttl, lock)
            return Outcome(DeliveryStatus.PENDING, retry_in=max(0.5, (left or hold_ms) / 1000))
        try:
            rec = self.delivery(did)  # re-read under the lock
            if rec["status"] != DeliveryStatus.PENDING.value:
                return Outcome(DeliveryStatus(rec["status"]))
            try:
                sub = self._load(rec["subscription_id"])
            except NotFound:
                return self._record(rec, None, "subscription deleted", 0.0, final=True)
            # the host lookup is part of the attempt: one deadline covers it, connecting,
            # sending and reading
            t0 = time.perf_counter()
            deadline_s = self.settings.webhook_timeout_s
            try:
                target = check_target(sub["url"], self.allowed,
                                      lambda host: resolve_within(self.resolve, host, deadline_s),
                                      self.backends)
            except Unresolvable as exc:
                return self._record(rec, None, f"ConnectionError: {exc.detail}",
                                    (time.perf_counter() - t0) * 1e3)
            except BadInput as exc:
                return self._record(rec, None, f"refused: {exc.detail}", 0.0, final=True)
            return self._send(rec, sub, target, t0)
        finally:
            self.kv.call("unlock delivery", self.kv.client.delete, lock)

    def _send(self, rec: dict[str, Any], sub: dict[str, Any], target: Target, t0: float) -> Outcome:
        """One attempt's POST, within what the host lookup that began at ``t0`` left of the
        deadline."""
        body = rec["body"].encode("utf-8")
        now = time.time()
        ts = str(int(now))
        headers = delivery_headers(rec["event"], rec["id"], ts,
                                   signature_header(signing_secrets(sub, now), ts, body))
        left = self.settings.webhook_timeout_s - (time.perf_counter() - t0)
        try:
            reply = self.transport(target, body, headers, deadline_s=max(left, 0.001))
            code, error = reply.status, None if 200 <= reply.status < 300 else f"HTTP {reply.status}"
        except DeliveryError as exc:
            code, error = None, exc.detail[:500]
        return self._record(rec, code, error, (time.perf_counter() - t0) * 1e3)

    def _record(self, rec: dict[str, Any], code: int | None, error: str | None,
                duration_ms: float, *, final: bool = False) -> Outcome:
        n = len(rec["attempts"]) + 1
        # the log is read through the API: what failed, never the addresses a host resolved to
        error = scrub(error) if error is not None else None
        rec["attempts"].append({"n": n, "at": now_iso(), "status_code": code, "error": error,
                                "duration_ms": round(duration_ms, 1)})
        rec["updated_at"] = now_iso()
        retry_in = None
        if error is None:
            rec["status"] = DeliveryStatus.DELIVERED.value
        elif final or n >= self.settings.webhook_max_attempts:
            rec["status"] = DeliveryStatus.FAILED.value
        else:
            retry_in = backoff_delay(n, self.settings.webhook_backoff_s, self.settings.webhook_backoff_max_s)
            rec["next_attempt_in_s"] = retry_in
        if retry_in is None:
            rec.pop("next_attempt_in_s", None)
        self.kv.call("record delivery", self.kv.client.set, self.kv.key("delivery", rec["id"]),
                     json.dumps(rec), ex=self.settings.job_ttl_s)
        return Outcome(DeliveryStatus(rec["status"]), retry_in)
