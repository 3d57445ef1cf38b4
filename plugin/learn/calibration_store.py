"""Where a tenant's recalibration lives, how it is refitted, and when it is due.

A fitted recalibration (``plugin.learn.calibrate``) is a few numbers per tenant: its maps, the
auto-confirm tier, when it was fitted, from how many decisions, the held-out ECE before and after,
and the packaged calibrator it sits on. It is kept in Redis under the tenant's key (API keys and
webhook subscriptions live there too, with the same persistence), with the previous ones in a
short history; every process (API, workers) reads it through ``Recalibrations``, which caches a
tenant's answer for ``FACTSIEVE_LEARN_CACHE_S``. The decision log in OpenSearch stays the source
of truth: a lost recalibration is refitted from it.
"""
from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from plugin.errors import BadInput
from plugin.learn.calibrate import Fit, Recalibration, fit_tenant
from plugin.learn.tenant_records import TenantRecords
from plugin.review.queries import export_query, tenant_filter
from plugin.review.records import Decision
from plugin.search.calibration import calibrator_path
from plugin.kv import KV
from plugin.settings import Settings

if TYPE_CHECKING:
    from plugin.review.desk import ReviewDesk

log = logging.getLogger(__name__)

#: how many earlier recalibrations of a tenant are kept (``Recalibrations.history``)
HISTORY_KEEP = 10
#: the most tenants one scheduled check looks at
MAX_TENANTS = 10_000


@lru_cache(maxsize=32)
def packaged_sha256(name: str) -> str | None:
    """The first 16 hex digits of the packaged calibrator's SHA-256 (``None``: none packaged):
    a tenant's map applies to the calibrator it was fitted on, not to a retrained one."""
    path = calibrator_path(name)
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else None


def record_of(fit: Fit, tenant: str, fitted_at: str) -> dict[str, Any]:
    """What is stored for a tenant (and what ``factsieve learn calibrate`` prints of it)."""
    return {"tenant": tenant, "fitted_at": fitted_at, "params": fit.recalibration.to_dict(),
            "tier": fit.tier.to_dict(), "counts": fit.counts, "per_language": fit.per_language,
            "ece_before": fit.ece["before"], "ece_after": fit.ece["after"],
            "ece_at_1_before": fit.ece["at_1_before"], "ece_at_1_after": fit.ece["at_1_after"],
            "calibrator": {"name": fit.calibrator, "sha256": packaged_sha256(fit.calibrator)},
            "decisions_until": fit.decisions_until}


# -- query bodies (pure) -----------------------------------------------------------------------------
def tenants_body(limit: int = MAX_TENANTS) -> dict[str, Any]:
    """Every tenant with decisions."""
    return {"size": 0, "aggs": {"tenants": {"terms": {"field": "tenant", "size": limit}}}}


def new_decisions_body(tenant: str, after: str | None) -> dict[str, Any]:
    """The count of the tenant's decisions made after ``after`` by a reviewer (not ``auto``, not the
    public's ``tipline`` feedback)."""
    filters: list[dict[str, Any]] = [tenant_filter(tenant)]
    if after:
        filters.append({"range": {"at": {"gt": after}}})
    return {"size": 0, "track_total_hits": True,
            "query": {"bool": {"filter": filters, "must_not": [{"terms": {"origin": ["auto", "tipline"]}}]}}}


# -- storage -----------------------------------------------------------------------------------------
class Recalibrations:
    """The tenants' stored recalibrations in Redis (``TenantRecords``, kind ``calibration``)."""

    def __init__(self, kv: KV, settings: Settings) -> None:
        self.kv = kv
        self.records = TenantRecords(kv, "calibration", settings.learn_cache_s, HISTORY_KEEP)
        self._key = self.records.key

    def get(self, tenant: str) -> dict[str, Any] | None:
        """The tenant's current recalibration (``record_of``), or ``None``."""
        return self.records.get(tenant)

    def model(self, tenant: str) -> tuple[Recalibration, dict[str, Any]] | None:
        """The tenant's map and its record, or ``None``."""
        record = self.get(tenant)
        return (Recalibration.from_dict(record["params"]), record) if record else None

    def save(self, tenant: str, record: Mapping[str, Any]) -> None:
        """``record`` becomes the tenant's current recalibration; the one it replaces goes to the
        front of the history (at most ``HISTORY_KEEP``); a noted refusal is cleared."""
        self.records.replace(tenant, record, also_delete=("attempt",))

    def history(self, tenant: str) -> list[dict[str, Any]]:
        """The tenant's earlier recalibrations, newest first."""
        return self.records.history(tenant)

    def note_refusal(self, tenant: str, decisions_until: str | None, reason: str) -> None:
        """A refused refit, so that the schedule waits for new decisions before trying again."""
        body = json.dumps({"decisions_until": decisions_until, "reason": reason,
                           "at": datetime.now(UTC).isoformat(timespec="seconds")})
        self.kv.call("note refusal", self.kv.client.set, self._key(tenant, "attempt"), body)

    def last_seen(self, tenant: str) -> str | None:
        """The newest decision time the last fit or refused attempt looked at."""
        raws = self.kv.call("read attempts", self.kv.client.mget,
                            [self._key(tenant, "current"), self._key(tenant, "attempt")])
        seen = [json.loads(r).get("decisions_until") for r in raws if r]
        return max((s for s in seen if s), default=None)


# -- refit -------------------------------------------------------------------------------------------
def tenant_decisions(desk: ReviewDesk, tenant: str) -> Iterator[Decision]:
    """The tenant's whole decision log (candidate snapshots included), parsed here at the log's
    edge, one decision at a time as the scroll reads them (the desk owns the log's alias)."""
    desk.ensure()
    for hit in desk.store.scan(desk.log, export_query(tenant)):
        yield Decision.from_source(hit["_source"])


def refit(desk: ReviewDesk, recalibrations: Recalibrations, tenant: str, *,
          store: bool = True) -> dict[str, Any]:
    """Fit the tenant's recalibration from its decisions and (``store``) make it the one served;
    the stored record plus ``stored``. A refusal (``BadInput``) is noted and raised."""
    decisions = list(tenant_decisions(desk, tenant))
    try:
        fit = fit_tenant(decisions, tenant)
    except BadInput as exc:
        if store:
            newest = max((d.at for d in decisions), default=None)
            recalibrations.note_refusal(tenant, newest, exc.detail)
        raise
    record = record_of(fit, tenant, datetime.now(UTC).isoformat(timespec="milliseconds"))
    if store:
        recalibrations.save(tenant, record)
    return {**record, "stored": store}


def due_tenants(desk: ReviewDesk, recalibrations: Recalibrations, min_new: int) -> list[tuple[str, int]]:
    """``(tenant, new decisions)`` of every tenant with at least ``min_new`` decisions by a
    person since its last fit (or refused attempt)."""
    desk.ensure()
    buckets = desk.store.search(desk.log, tenants_body())["aggregations"]["tenants"]["buckets"]
    out = []
    for b in buckets:
        tenant = b["key"]
        after = recalibrations.last_seen(tenant)
        found = desk.store.search(desk.log, new_decisions_body(tenant, after))
        new = int(found["hits"]["total"]["value"])
        if new >= min_new:
            out.append((tenant, new))
    return out


def refit_due(desk: ReviewDesk, recalibrations: Recalibrations, kv: KV, settings: Settings) -> dict[str, Any]:
    """The scheduled check: refit every due tenant (``due_tenants``); a refusal is logged and
    noted, never raised. One check at a time across workers (a Redis lock in ``kv``)."""
    lock_s = max(1, int(settings.learn_calibrate_every_s))
    if not kv.call("recalibration lock", kv.client.set, kv.key("learn", "calibration-lock"), "1",
                   nx=True, ex=lock_s):
        return {"locked": True, "refitted": [], "refused": []}
    refitted, refused = [], []
    for tenant, new in due_tenants(desk, recalibrations, settings.learn_calibrate_min_new_decisions):
        try:
            refit(desk, recalibrations, tenant)
            refitted.append(tenant)
        except BadInput as exc:
            log.info("recalibration of tenant %s refused (%d new decisions): %s", tenant, new, exc.detail)
            refused.append(tenant)
    return {"locked": False, "refitted": refitted, "refused": refused}
