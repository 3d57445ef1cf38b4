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
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plugin.errors import NotFound
from plugin.learn.tenant_records import TenantRecords
from plugin.kv import KV
from plugin.settings import Settings

if TYPE_CHECKING:
    from plugin.search.retrieval import RetrievalConfig

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
    """The tenants' champion rerankers in Redis (``TenantRecords``, kind ``reranker``)."""

    def __init__(self, kv: KV, settings: Settings) -> None:
        self.kv, self.settings = kv, settings
        self.records = TenantRecords(kv, "reranker", settings.learn_cache_s, HISTORY_KEEP)
        self._key = self.records.key
        #: the packaged adapters' digests, by name (read once per process)
        self._digests: dict[str, str] = {}

    def get(self, tenant: str) -> dict[str, Any] | None:
        """The tenant's champion record, or ``None`` (the packaged reranker serves)."""
        return self.records.get(tenant)

    def serving(self, cfg: RetrievalConfig, tenant: str) -> str | None:
        """The folder of the tenant's champion reranker when ``cfg`` reranks with the packaged
        adapter it was fine-tuned from (the same file: a retrained adapter's champion is not
        served), else ``None``: the configuration's own reranker serves."""
        from plugin.embedding.query_tower import adapter_digest
        from plugin.search.lora_reranker import packaged_rerankers, reranker_adapter_dir

        record = self.get(tenant)
        name = Path(cfg.rerank.model).name if record and cfg.rerank else None
        if record is None or name is None or name != record["start"]["name"] or name not in packaged_rerankers():
            return None
        if name not in self._digests:
            self._digests[name] = adapter_digest(name, reranker_adapter_dir())
        return str(self.folder(record)) if self._digests[name] == record["start"]["sha256"] else None

    def folder(self, record: Mapping[str, Any]) -> Path:
        """The ONNX folder a champion record names (relative to the model cache)."""
        return self.settings.model_cache_dir / record["model"]

    def log_attempt(self, tenant: str, attempt: Mapping[str, Any]) -> None:
        """One training attempt (its scores, verdict, or why it failed), newest first."""
        self.records.append(tenant, "attempts", attempt, ATTEMPTS_KEEP)

    def attempts(self, tenant: str) -> list[dict[str, Any]]:
        return self.records.entries(tenant, "attempts")

    def promote(self, tenant: str, record: Mapping[str, Any]) -> None:
        """``record`` becomes the tenant's champion; the one it replaces (or ``{"packaged":
        true}`` when none did) goes to the front of the history."""
        self.records.replace(tenant, record, replaced_none={"packaged": True})

    def history(self, tenant: str) -> list[dict[str, Any]]:
        return self.records.history(tenant)

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
        old, prev = self.records.call("roll back reranker", pop, tenant)
        if not old:
            raise NotFound(f"tenant {tenant!r} has no learned reranker to roll back")
        restored = json.loads(prev) if prev else {"packaged": True}
        result = {"tenant": tenant, "rolled_back": json.loads(old)["version"],
                  "serving": restored.get("version", "packaged"), "at": now()}
        self.log_attempt(tenant, {"rollback": result, "at": result["at"]})
        return result
