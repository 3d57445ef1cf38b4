"""``TenantRecords``: the one place a tenant's learned state is kept in Redis.

A kind of learned model (``calibration``, ``reranker``) has, per tenant, one current record
(``<prefix>:learn:<kind>:<tenant>:current``), the records it replaced (``…:history``, newest
first, capped) and any capped logs its owner keeps (``…:<name>``). Every process reads the current
record through a short per-process cache (``FACTSIEVE_LEARN_CACHE_S``); a process that replaces
it sees its own write at once.
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from plugin.kv import KV


class TenantRecords:
    def __init__(self, kv: KV, kind: str, cache_s: float, history_keep: int) -> None:
        self.kv, self.kind = kv, kind
        self.cache_s, self.history_keep = cache_s, history_keep
        self._cache: dict[str, tuple[float, dict[str, Any] | None]] = {}
        self._lock = threading.Lock()

    def key(self, tenant: str, *rest: str) -> str:
        return self.kv.key("learn", self.kind, tenant, *rest)

    def get(self, tenant: str) -> dict[str, Any] | None:
        """The tenant's current record, or ``None``, at most ``cache_s`` old."""
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(tenant)
        if hit is not None and now - hit[0] < self.cache_s:
            return hit[1]
        raw = self.kv.call(f"read {self.kind} record", self.kv.client.get, self.key(tenant, "current"))
        record = json.loads(raw) if raw else None
        with self._lock:
            self._cache[tenant] = (now, record)
        return record

    def remember(self, tenant: str, record: Mapping[str, Any] | None) -> None:
        """This process's cache of the tenant's record, after it changed it."""
        with self._lock:
            self._cache[tenant] = (time.monotonic(), dict(record) if record is not None else None)

    def replace(self, tenant: str, record: Mapping[str, Any], *, replaced_none: Mapping[str, Any] | None = None,
                also_delete: tuple[str, ...] = ()) -> None:
        """``record`` becomes current; the one it replaces (``replaced_none`` when there was none,
        or nothing) goes to the front of the history; ``also_delete`` names keys cleared with it."""
        current, history = self.key(tenant, "current"), self.key(tenant, "history")

        def swap() -> None:
            old = self.kv.client.get(current) or (json.dumps(replaced_none) if replaced_none else None)
            pipe = self.kv.client.pipeline(transaction=True)
            if old:
                pipe.lpush(history, old)
                pipe.ltrim(history, 0, self.history_keep - 1)
            pipe.set(current, json.dumps(record, sort_keys=True))
            for name in also_delete:
                pipe.delete(self.key(tenant, name))
            pipe.execute()

        self.kv.call(f"store {self.kind} record", swap)
        self.remember(tenant, record)

    def history(self, tenant: str) -> list[dict[str, Any]]:
        """The records the current one replaced, newest first."""
        return self.entries(tenant, "history")

    def append(self, tenant: str, name: str, entry: Mapping[str, Any], keep: int) -> None:
        """``entry`` at the front of the tenant's log ``name``, which keeps the newest ``keep``."""
        key = self.key(tenant, name)

        def push() -> None:
            pipe = self.kv.client.pipeline(transaction=True)
            pipe.lpush(key, json.dumps(entry, sort_keys=True))
            pipe.ltrim(key, 0, keep - 1)
            pipe.execute()

        self.kv.call(f"log {self.kind} {name}", push)

    def entries(self, tenant: str, name: str) -> list[dict[str, Any]]:
        raws = self.kv.call(f"read {self.kind} {name}", self.kv.client.lrange, self.key(tenant, name), 0, -1)
        return [json.loads(r) for r in raws]

    def call(self, what: str, fn: Callable[[], Any], tenant: str) -> Any:
        """``fn`` (several Redis calls on the tenant's keys), then the cache forgets the tenant."""
        try:
            return self.kv.call(what, fn)
        finally:
            with self._lock:
                self._cache.pop(tenant, None)
