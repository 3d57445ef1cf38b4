"""Webhook subscriptions and signed, retried, logged deliveries.

Signing follows the Stripe/GitHub convention: ``X-FactSieve-Signature: sha256=<hex
HMAC-SHA256(secret, "<timestamp>.<raw body>")>`` with the Unix ``X-FactSieve-Timestamp`` inside
the MAC, so a receiver can refuse replays outside a tolerance. Deliveries are at least once:
every attempt of one delivery carries the same ``X-FactSieve-Delivery`` id, so a receiver can
drop the rare duplicate left by a worker killed between sending and recording.

URLs are checked when a subscription is created *and* before every attempt (DNS may change):
only http(s), no credentials, and no loopback, private, link-local or otherwise non-global
address unless the host is listed in ``FACTSIEVE_WEBHOOK_ALLOWED_HOSTS``. Redirects are not
followed, since a redirect could point anywhere.
"""
from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import secrets
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any
from urllib.parse import urlsplit

from plugin.errors import BadInput, NotFound
from plugin.service.jobs import now_iso
from plugin.service.kv import KV
from plugin.settings import Settings

SIGNATURE_HEADER = "X-FactSieve-Signature"
TIMESTAMP_HEADER = "X-FactSieve-Timestamp"
DELIVERY_HEADER = "X-FactSieve-Delivery"
EVENT_HEADER = "X-FactSieve-Event"


class Event(str, Enum):
    #: a post submitted to ``/v1/posts`` matched fact-checks above the subscription's threshold
    POST_MATCHED = "post.matched"
    #: a verification job finished (every subscription to it whose languages include the claim's)
    CLAIM_VERIFIED = "claim.verified"


# -- pure functions ---------------------------------------------------------------------------
def sign(secret: str, timestamp: int | str, body: bytes) -> str:
    mac = hmac.new(secret.encode("utf-8"), f"{timestamp}.".encode("ascii") + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def verify_signature(secret: str, body: bytes, timestamp: str | None, signature: str | None, *,
                     now: float | None = None, tolerance_s: int = 300) -> bool:
    """What a receiver runs: the MAC matches (constant time) and the timestamp is recent."""
    if not timestamp or not signature or not timestamp.isdigit():
        return False
    current = time.time() if now is None else now
    if abs(current - int(timestamp)) > tolerance_s:
        return False
    return hmac.compare_digest(sign(secret, timestamp, body), signature)


def backoff_delay(failed_attempts: int, base_s: float, max_s: float) -> float:
    """Seconds before the next attempt after ``failed_attempts`` failures: base, 2·base, 4·base …
    capped at ``max_s``."""
    return float(min(max_s, base_s * (2 ** max(0, failed_attempts - 1))))


def is_public_address(address: str) -> bool:
    """True for globally routable unicast addresses (IPv4-mapped IPv6 judged as IPv4)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def resolve_host(host: str) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise BadInput(f"webhook host {host!r} does not resolve: {exc}") from None
    return sorted({info[4][0] for info in infos})


def check_url(url: str, allowed_hosts: Iterable[str] = (),
              resolve: Callable[[str], list[str]] = resolve_host) -> str:
    """Return ``url`` if webhooks may be sent to it, else raise ``BadInput`` saying why."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as exc:
        raise BadInput(f"webhook URL {url!r} is malformed: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise BadInput(f"webhook URL {url!r} must be http or https")
    if not parts.hostname:
        raise BadInput(f"webhook URL {url!r} has no host")
    if parts.username is not None or parts.password is not None:
        raise BadInput(f"webhook URL for host {parts.hostname!r} must not carry credentials; "
                       "the signature authenticates deliveries")
    host = parts.hostname.lower().rstrip(".")
    if host in {h.lower() for h in allowed_hosts}:
        return url
    for address in resolve(host):
        if not is_public_address(address):
            raise BadInput(f"webhook URL {url!r} resolves to {address}, a loopback, private or "
                           "link-local address; list the host in FACTSIEVE_WEBHOOK_ALLOWED_HOSTS "
                           "to allow it")
    return url


def wants(subscription: dict[str, Any], event: Event, lang: str | None,
          best_score: float | None) -> bool:
    """Whether a subscription receives an event for a post in ``lang`` whose best match scored
    ``best_score`` (``None``: no match at all, which ``post.matched`` never delivers)."""
    if event.value not in subscription["events"]:
        return False
    languages = subscription.get("languages")
    if languages and lang not in languages:
        return False
    if event is Event.CLAIM_VERIFIED:
        return True  # a verdict has no match score: min_score is for post.matched
    if best_score is None:
        return False
    min_score = subscription.get("min_score")
    return min_score is None or best_score >= min_score


def delivery_id(subscription_id: str, event: Event, dedupe_key: str) -> str:
    """Deterministic, so planning the same delivery twice (a redelivered task) is a no-op."""
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


def public(subscription: dict[str, Any]) -> dict[str, Any]:
    """A subscription as the API shows it: never with its secret."""
    return {k: subscription.get(k) for k in _PUBLIC_FIELDS}


class WebhookStore:
    def __init__(self, kv: KV, settings: Settings, http: Any = None) -> None:
        self.kv = kv
        self.settings = settings
        self.allowed = settings.webhook_allowed_hosts
        self._http = http

    @property
    def http(self) -> Any:
        if self._http is None:
            import requests

            session = requests.Session()
            session.trust_env = False  # no proxies or netrc from the environment: we checked the URL
            self._http = session
        return self._http

    # -- subscriptions ----------------------------------------------------------------------------
    def create(self, url: str, events: list[Event], languages: list[str] | None = None,
               min_score: float | None = None, secret: str | None = None) -> dict[str, Any]:
        """Store a subscription; returns it *with* its secret (the only time it is shown)."""
        check_url(url, self.allowed)
        sub = {"id": "whk_" + secrets.token_hex(8), "url": url,
               "events": sorted({e.value for e in events}), "languages": languages,
               "min_score": min_score, "created_at": now_iso(),
               "secret": secret or secrets.token_urlsafe(32)}
        pipe = self.kv.client.pipeline()
        pipe.set(self.kv.key("webhook", sub["id"]), json.dumps(sub))
        pipe.sadd(self.kv.key("webhook-ids"), sub["id"])
        self.kv.call("create webhook", pipe.execute)
        return sub

    def _load(self, sub_id: str) -> dict[str, Any]:
        raw = self.kv.call("read webhook", self.kv.client.get, self.kv.key("webhook", sub_id))
        if raw is None:
            raise NotFound(f"no webhook subscription with id {sub_id!r}")
        return json.loads(raw)

    def get(self, sub_id: str) -> dict[str, Any]:
        return public(self._load(sub_id))

    def all(self) -> list[dict[str, Any]]:
        """Every subscription, secrets included (for the workers)."""
        ids = self.kv.call("list webhooks", self.kv.client.smembers, self.kv.key("webhook-ids"))
        if not ids:
            return []
        raws = self.kv.call("read webhooks", self.kv.client.mget,
                            [self.kv.key("webhook", i) for i in sorted(ids)])
        return sorted((json.loads(r) for r in raws if r), key=lambda s: s["created_at"])

    def list(self) -> list[dict[str, Any]]:
        return [public(s) for s in self.all()]

    def delete(self, sub_id: str) -> None:
        self._load(sub_id)
        pipe = self.kv.client.pipeline()
        pipe.delete(self.kv.key("webhook", sub_id))
        pipe.srem(self.kv.key("webhook-ids"), sub_id)
        self.kv.call("delete webhook", pipe.execute)

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
        A short Redis lock keeps two workers from sending the same delivery at once.
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
            try:
                check_url(sub["url"], self.allowed)
            except BadInput as exc:
                return self._record(rec, None, f"refused: {exc.detail}", 0.0, final=True)
            return self._send(rec, sub)
        finally:
            self.kv.call("unlock delivery", self.kv.client.delete, lock)

    def _send(self, rec: dict[str, Any], sub: dict[str, Any]) -> Outcome:
        import requests

        body = rec["body"].encode("utf-8")
        ts = str(int(time.time()))
        headers = {"Content-Type": "application/json", "User-Agent": "FactSieve-Webhooks/1",
                   EVENT_HEADER: rec["event"], DELIVERY_HEADER: rec["id"], TIMESTAMP_HEADER: ts,
                   SIGNATURE_HEADER: sign(sub["secret"], ts, body)}
        t0 = time.perf_counter()
        try:
            resp = self.http.post(sub["url"], data=body, headers=headers,
                                  timeout=self.settings.webhook_timeout_s, allow_redirects=False)
            resp.close()
            code, error = resp.status_code, None if 200 <= resp.status_code < 300 else f"HTTP {resp.status_code}"
        except requests.RequestException as exc:
            code, error = None, f"{type(exc).__name__}: {exc}"[:500]
        return self._record(rec, code, error, (time.perf_counter() - t0) * 1e3)

    def _record(self, rec: dict[str, Any], code: int | None, error: str | None,
                duration_ms: float, *, final: bool = False) -> Outcome:
        n = len(rec["attempts"]) + 1
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
