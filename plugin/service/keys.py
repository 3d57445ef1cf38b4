"""API keys and per-key rate limits, in Redis.

A key is ``<api_key_prefix><43 random url-safe characters>``, shown once at creation. Only its
SHA-256 is stored: keys are 256-bit random tokens, so a fast hash is enough (slow password
hashes exist for guessable secrets) and lookups stay one round trip. Rate limiting is a fixed
window per key (``INCR`` + ``EXPIRE``): simple, one round trip, at most twice the limit across
a window boundary. Requests with a missing or unknown key count against their client address
(``hit_unauthenticated``), so failing authentication is not a way around the limit.
"""
from __future__ import annotations

import hashlib
import re
import secrets
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from typing import Any

from plugin.errors import BadInput, NotFound, RateLimited, Unauthorized
from plugin.owners import DEFAULT_TENANT, Writer
from plugin.models import CONTROL_CHARS
from plugin.kv import KV
from plugin.settings import Settings


class Scope(str, Enum):
    """``read`` may query (GET routes, match, verify, rerank); ``write`` may also change state
    (its tenant's posts and webhooks, and its own documents of the shared fact-check and evidence
    corpus: ``plugin.owners``); ``admin`` may do all of that and sees every tenant's jobs, posts
    and webhooks, and changes every tenant's documents."""

    READ = "read"
    WRITE = "write"
    ADMIN = "admin"

    @classmethod
    def parse(cls, value: str | Scope) -> Scope:
        try:
            return cls(value)
        except ValueError:
            raise BadInput(f"unknown scope {value!r}; valid scopes: "
                           f"{', '.join(s.value for s in cls)}") from None

    def allows(self, needed: Scope) -> bool:
        rank = {Scope.READ: 0, Scope.WRITE: 1, Scope.ADMIN: 2}
        return rank[self] >= rank[needed]


TENANT = re.compile(r"[a-z0-9][a-z0-9_.\-]{0,62}")


def check_tenant(tenant: str) -> str:
    if not TENANT.fullmatch(tenant):
        raise BadInput(f"invalid tenant {tenant[:80]!r}: 1 to 63 lower-case letters, digits, '_', '.', '-'")
    return tenant


@dataclass(frozen=True)
class ApiKey:
    id: str
    name: str
    scope: Scope
    created_at: str
    #: the newsroom the key acts for: its jobs, posts and webhooks are that tenant's own
    tenant: str = DEFAULT_TENANT

    @property
    def sees(self) -> str | None:
        """The tenant whose records this key may read and change; ``None`` (all) for admin."""
        return None if self.scope is Scope.ADMIN else self.tenant

    @property
    def writer(self) -> Writer:
        """Who this key writes fact-checks and evidence as (``plugin.owners``)."""
        return Writer(tenant=self.tenant, admin=self.scope is Scope.ADMIN)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def window(now: float, size_s: int) -> tuple[int, int]:
    """The fixed window ``now`` falls in: ``(window start, seconds until the next one)``."""
    start = int(now // size_s) * size_s
    return start, max(1, start + size_s - int(now))


def client_address(remote_addr: str | None, forwarded_for: str | None, trust_forwarded: bool) -> str:
    """Whom a request without a valid key is counted against (pure): the TCP peer, or with
    ``trust_forwarded`` (a trusted reverse proxy in front) the last ``X-Forwarded-For`` entry,
    the one that proxy appended; earlier entries are the client's to forge."""
    if trust_forwarded and forwarded_for:
        last = forwarded_for.split(",")[-1].strip()
        if last:
            return last
    return remote_addr or "unknown"


class KeyStore:
    def __init__(self, kv: KV, settings: Settings) -> None:
        self.kv = kv
        self.prefix = settings.api_key_prefix
        self.limit = settings.rate_limit_requests
        self.window_s = settings.rate_limit_window_s
        self.anon_limit = settings.unauthenticated_rate_limit_requests

    def create(self, name: str, scope: Scope = Scope.READ,
               tenant: str = DEFAULT_TENANT) -> tuple[ApiKey, str]:
        """A new key; returns its record and the key itself (never stored, never shown again)."""
        name = name.strip()
        if not name or len(name) > 200:
            raise BadInput("a key needs a --name of 1 to 200 characters")
        if CONTROL_CHARS.search(name):  # names are listed and logged: no forged lines
            raise BadInput("a key's --name must not contain control characters")
        key = self.prefix + secrets.token_urlsafe(32)
        record = ApiKey(id="key_" + secrets.token_hex(8), name=name, scope=scope,
                        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                        tenant=check_tenant(tenant))
        digest = hash_key(key)
        fields = {"id": record.id, "name": record.name, "scope": record.scope.value,
                  "created_at": record.created_at, "tenant": record.tenant}
        pipe = self.kv.client.pipeline()
        pipe.hset(self.kv.key("apikey", digest), mapping=fields)
        pipe.hset(self.kv.key("apikeys"), record.id, digest)
        self.kv.call("create api key", pipe.execute)
        return record, key

    def authenticate(self, key: str | None) -> ApiKey:
        if not key:
            raise Unauthorized("missing API key: send 'Authorization: Bearer <key>' "
                               "(create one with `factsieve keys create --name NAME`)")
        found = self.kv.call("read api key", self.kv.client.hgetall, self.kv.key("apikey", hash_key(key)))
        if not found:
            raise Unauthorized("unknown or revoked API key")
        return ApiKey(id=found["id"], name=found["name"], scope=Scope(found["scope"]),
                      created_at=found["created_at"], tenant=found.get("tenant") or DEFAULT_TENANT)

    def hit(self, key_id: str, now: float | None = None) -> tuple[int, int]:
        """Count one request against the key's window; returns ``(remaining, reset_s)`` or raises
        ``RateLimited`` carrying ``retry_after``."""
        count, reset = self._count(("ratelimit", key_id), now)
        if count > self.limit:
            raise RateLimited(f"API key {key_id} made more than {self.limit} requests in "
                              f"{self.window_s} s; retry in {reset} s", retry_after=reset, limit=self.limit)
        return self.limit - count, reset

    def hit_unauthenticated(self, address: str, now: float | None = None) -> None:
        """Count one request with a missing or unknown key against its client address's window;
        raises ``RateLimited`` past ``unauthenticated_rate_limit_requests`` (such requests have
        no key to count against, and would otherwise be free)."""
        count, reset = self._count(("ratelimit-anon", address[:100]), now)
        if count > self.anon_limit:
            raise RateLimited(f"more than {self.anon_limit} requests without a valid API key from "
                              f"{address[:100]} in {self.window_s} s; retry in {reset} s",
                              retry_after=reset, limit=self.anon_limit)

    def _count(self, name: tuple[str, ...], now: float | None) -> tuple[int, int]:
        start, reset = window(time.time() if now is None else now, self.window_s)
        counter = self.kv.key(*name, str(start))
        pipe = self.kv.client.pipeline()
        pipe.incr(counter)
        pipe.expire(counter, self.window_s + 1)
        count, _ = self.kv.call("rate limit", pipe.execute)
        return int(count), reset

    def list(self) -> list[dict[str, Any]]:
        digests = self.kv.call("list api keys", self.kv.client.hgetall, self.kv.key("apikeys"))
        out = []
        for digest in digests.values():
            found = self.kv.call("read api key", self.kv.client.hgetall, self.kv.key("apikey", digest))
            if found:
                out.append(found)
        return sorted(out, key=lambda k: k["created_at"])

    def revoke(self, key_id: str) -> None:
        digest = self.kv.call("find api key", self.kv.client.hget, self.kv.key("apikeys"), key_id)
        if not digest:
            raise NotFound(f"no API key with id {key_id!r}")
        pipe = self.kv.client.pipeline()
        pipe.delete(self.kv.key("apikey", digest))
        pipe.hdel(self.kv.key("apikeys"), key_id)
        self.kv.call("revoke api key", pipe.execute)
