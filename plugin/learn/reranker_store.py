"""Which reranker serves a tenant: its champion record in Redis, with history and attempts.

``factsieve learn reranker`` (``plugin.learn.reranker_train``) writes a tenant's challenger under
``<model cache>/learned-rerankers/<tenant>/<version>/`` (the adapter, and the ONNX folder built
from it) and, when the gate promotes it, records it here as the tenant's champion; the one it
replaces goes to the front of the history, which ``rollback`` restores. Every attempt, promoted
or not, failed or not, is logged with both scores. Serving (``Services.matcher`` with a tenant)
reads the record through a per-process cache of ``FACTSIEVE_LEARN_CACHE_S`` and serves its folder
for configurations that rerank with the adapter it was fine-tuned from. No record: the packaged
reranker serves. Model folders are files: API processes and workers must share the model cache.
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from plugin.errors import NotFound
from plugin.service.kv import KV
from plugin.settings import Settings

#: how many earlier champions of a tenant are kept (what ``rollback`` can go back through)
HISTORY_KEEP = 10
#: how many attempts of a tenant are kept in its log
ATTEMPTS_KEEP = 50
#: the folder under ``Settings.model_cache_dir`` that holds the tenants' rerankers
LEARNED_DIR = "learned-rerankers"


def tenant_dir(settings: Settings, tenant: str) -> Path:
    return settings.model_cache_dir / LEARNED_DIR / tenant


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class Champions:
    """The tenants' champion rerankers, read through a short per-process cache."""

    def __init__(self, kv: KV, settings: Settings) -> None:
        self.kv, self.settings = kv, settings
        self.cache_s = settings.learn_cache_s
        self._cache: dict[str, tuple[float, dict[str, Any] | None]] = {}
        self._lock = threading.Lock()

    def _key(self, tenant: str, *rest: str) -> str:
        return self.kv.key("learn", "reranker", tenant, *rest)

    def get(self, tenant: str) -> dict[str, Any] | None:
        """The tenant's champion record, or ``None`` (the packaged reranker serves)."""
        t = time.monotonic()
        with self._lock:
            hit = self._cache.get(tenant)
        if hit is not None and t - hit[0] < self.cache_s:
            return hit[1]
        raw = self.kv.call("read reranker champion", self.kv.client.get, self._key(tenant, "current"))
        record = json.loads(raw) if raw else None
        with self._lock:
            self._cache[tenant] = (t, record)
        return record

    def folder(self, record: Mapping[str, Any]) -> Path:
        """The ONNX folder a champion record names (relative to the model cache)."""
        return self.settings.model_cache_dir / record["model"]

    def _forget(self, tenant: str) -> None:
        with self._lock:
            self._cache.pop(tenant, None)

    def log_attempt(self, tenant: str, attempt: Mapping[str, Any]) -> None:
        """One training attempt (its scores, verdict, or why it failed), newest first."""
        key = self._key(tenant, "attempts")

        def push() -> None:
            pipe = self.kv.client.pipeline(transaction=True)
            pipe.lpush(key, json.dumps(attempt, sort_keys=True))
            pipe.ltrim(key, 0, ATTEMPTS_KEEP - 1)
            pipe.execute()
        self.kv.call("log reranker attempt", push)

    def attempts(self, tenant: str) -> list[dict[str, Any]]:
        raws = self.kv.call("read reranker attempts", self.kv.client.lrange,
                            self._key(tenant, "attempts"), 0, -1)
        return [json.loads(r) for r in raws]

    def promote(self, tenant: str, record: Mapping[str, Any]) -> None:
        """``record`` becomes the tenant's champion; the one it replaces (or ``{"packaged":
        true}`` when none did) goes to the front of the history."""
        current, history = self._key(tenant, "current"), self._key(tenant, "history")

        def swap() -> None:
            old = self.kv.client.get(current) or json.dumps({"packaged": True})
            pipe = self.kv.client.pipeline(transaction=True)
            pipe.lpush(history, old)
            pipe.ltrim(history, 0, HISTORY_KEEP - 1)
            pipe.set(current, json.dumps(record, sort_keys=True))
            pipe.execute()
        self.kv.call("promote reranker", swap)
        self._forget(tenant)

    def history(self, tenant: str) -> list[dict[str, Any]]:
        raws = self.kv.call("read reranker history", self.kv.client.lrange,
                            self._key(tenant, "history"), 0, -1)
        return [json.loads(r) for r in raws]

    def rollback(self, tenant: str) -> dict[str, Any]:
        """The previous champion serves again (the packaged reranker when that was it); the
        rolled-back one is dropped. ``NotFound`` when the tenant never promoted one."""
        current, history = self._key(tenant, "current"), self._key(tenant, "history")

        def pop() -> tuple[str | None, str | None]:
            old = self.kv.client.get(current)
            prev = self.kv.client.lpop(history) if old else None
            if old:
                if prev and not json.loads(prev).get("packaged"):
                    self.kv.client.set(current, prev)
                else:
                    self.kv.client.delete(current)
            return old, prev
        old, prev = self.kv.call("roll back reranker", pop)
        self._forget(tenant)
        if not old:
            raise NotFound(f"tenant {tenant!r} has no learned reranker to roll back")
        restored = json.loads(prev) if prev else {"packaged": True}
        result = {"tenant": tenant, "rolled_back": json.loads(old)["version"],
                  "serving": restored.get("version", "packaged"), "at": now()}
        self.log_attempt(tenant, {"rollback": result, "at": result["at"]})
        return result
