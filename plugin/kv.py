"""The one place FactSieve's own Redis keys are read and written.

Like ``store.Store`` for OpenSearch: one client, one key namespace (``settings.redis_prefix``),
and one translation of connection failures into ``BackendUnavailable`` naming the URL (without
its password). API keys, rate-limit windows, jobs, posts and webhook state all go through it.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import redis
from redis import exceptions as rx

from plugin.errors import BackendError, BackendUnavailable
from plugin.settings import Settings
from plugin.urls import redact_url

T = TypeVar("T")


class KV:
    """A prefixed, error-translating view of one Redis database."""

    def __init__(self, settings: Settings, client: redis.Redis | None = None) -> None:
        self.url = redact_url(settings.redis_url)
        self.prefix = settings.redis_prefix
        self.client = client or redis.Redis.from_url(
            settings.redis_url, socket_timeout=5, socket_connect_timeout=3,
            health_check_interval=30, decode_responses=True)

    def key(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

    def call(self, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        except (rx.ConnectionError, rx.TimeoutError) as exc:
            raise BackendUnavailable(f"Redis is not reachable at {self.url} ({what}): start the "
                                     f"local one with `make up`, or set FACTSIEVE_REDIS_URL") from exc
        except rx.RedisError as exc:
            raise BackendError(f"Redis error at {self.url} ({what}): {exc}") from exc

    def ping(self) -> bool:
        try:
            return bool(self.client.ping())
        except Exception:  # a health probe: any failure means "not ready"
            return False

    def delete_namespace(self) -> int:
        """Delete every key under the prefix (tests and `keys`-free resets); returns the count."""
        n = 0
        for key in self.call("scan", lambda: list(self.client.scan_iter(f"{self.prefix}:*", count=500))):
            n += self.call("delete", self.client.delete, key)
        return n
