"""Per-tenant job quota and fair admission to the shared Celery queues, in Redis.

*Quota*: at most ``tenant_max_active_jobs`` jobs queued or running per tenant (then 429).
*Fairness*: at most ``tenant_max_dispatched_jobs`` of a tenant's jobs are in a Celery queue or
running at a time; the rest wait in the tenant's own Redis list and are sent as slots free, each
with a broker priority from its tenant's load (on Redis a LOWER number is served first). Every
step is one Lua script (``LPOS``: Redis 6.0.6 or later); the sweeper repairs what a dying worker
leaves. The keys, release, precedence and starvation bounds: ``docs/design/admission.md``.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from plugin.errors import RateLimited
from plugin.kv import KV
from plugin.settings import Settings

#: A full quota frees a slot when one of the tenant's jobs ends, which nothing here can
#: predict; this is how long a client is told to wait before trying again.
QUOTA_RETRY_AFTER_S = 5
#: Broker priorities (Redis: lower first). ``FIRST`` is a message sent without one.
FIRST, LAST = 0, 9
PRIORITY_STEPS = tuple(range(FIRST, LAST + 1))
#: An id reserved this recently is not repaired by the sweeper even if its job record is not
#: written yet (``reserve`` comes before the record is written).
REPAIR_GRACE_S = 60.0

_RESERVE = """
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 1 end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
redis.call('SADD', KEYS[2], ARGV[4])
return 1
"""

_PLACE = """
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return 1 end
if redis.call('LPOS', KEYS[2], ARGV[1]) then return 0 end
if redis.call('SCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('SADD', KEYS[1], ARGV[1])
  return 1
end
redis.call('RPUSH', KEYS[2], ARGV[1])
return 0
"""

_RELEASE = """
if ARGV[1] ~= '' then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('SREM', KEYS[2], ARGV[1])
  redis.call('LREM', KEYS[3], 0, ARGV[1])
end
local out = {}
while redis.call('SCARD', KEYS[2]) < tonumber(ARGV[2]) do
  local nxt = redis.call('LPOP', KEYS[3])
  if not nxt then break end
  redis.call('SADD', KEYS[2], nxt)
  table.insert(out, nxt)
end
return out
"""


def quota_exceeded(tenant: str, cap: int) -> RateLimited:
    """The 429 for a tenant at its cap (pure): names the cap and the setting that sets it."""
    return RateLimited(f"tenant {tenant!r} already has {cap} jobs queued or running, the most "
                       f"FACTSIEVE_TENANT_MAX_ACTIVE_JOBS ({cap}) allows; retry when one has finished",
                       retry_after=QUOTA_RETRY_AFTER_S, limit=cap)


def dispatch_priority(active: int, slots: int) -> int:
    """The broker priority of a job sent for a tenant with ``active`` jobs queued or running
    (this one included) and ``slots`` dispatch slots (pure). A tenant whose whole load fits its
    slots gets ``FIRST + 1``; each doubling of the load past that is one step later, up to
    ``LAST``: a tenant with half another's backlog goes first, whatever the sizes. ``FIRST``
    itself is left to webhook deliveries and aged resends."""
    level, fits = FIRST + 1, max(1, slots)
    while active > fits and level < LAST:
        fits *= 2
        level += 1
    return level


class Admission:
    """The quota and the dispatch slots of every tenant (see the module docstring)."""

    def __init__(self, kv: KV, settings: Settings) -> None:
        self.kv = kv
        self.cap = settings.tenant_max_active_jobs
        self.slots = settings.tenant_max_dispatched_jobs
        self._scripts: dict[str, Any] = {}

    def _keys(self, tenant: str) -> tuple[str, str, str]:
        return (self.kv.key("tenant", tenant, "active"), self.kv.key("tenant", tenant, "dispatched"),
                self.kv.key("tenant", tenant, "waiting"))

    def _run(self, what: str, source: str, keys: list[str], args: list[Any]) -> Any:
        script = self._scripts.get(source)
        if script is None:
            script = self._scripts[source] = self.kv.client.register_script(source)
        return self.kv.call(what, script, keys=keys, args=args)

    def reserve(self, tenant: str, job_id: str, now: float) -> None:
        """Count ``job_id`` against the tenant's quota, or raise the 429 when it is full (an id
        already counted passes)."""
        active, _, _ = self._keys(tenant)
        if not self._run("reserve job slot", _RESERVE, [active, self.kv.key("tenants")],
                         [job_id, self.cap, now, tenant]):
            raise quota_exceeded(tenant, self.cap)

    def place(self, tenant: str, job_id: str) -> bool:
        """Whether to send ``job_id`` to Celery now (a free dispatch slot, or it holds one
        already); otherwise it is (or stays) in the tenant's waiting list."""
        _, dispatched, waiting = self._keys(tenant)
        return bool(self._run("place job", _PLACE, [dispatched, waiting], [job_id, self.slots]))

    def release(self, tenant: str, job_id: str = "") -> list[str]:
        """Free ``job_id``'s quota and dispatch slot (none: only fill free slots); returns the
        waiting ids just given a slot, oldest first, for the caller to send."""
        return list(self._run("release job slot", _RELEASE, list(self._keys(tenant)),
                              [job_id, self.slots]))

    def priority(self, tenant: str) -> int:
        """``dispatch_priority`` of the tenant's current load."""
        active, _, _ = self._keys(tenant)
        return dispatch_priority(int(self.kv.call("count active jobs", self.kv.client.zcard, active)),
                                 self.slots)

    def tenants(self) -> list[str]:
        return sorted(self.kv.call("list tenants", self.kv.client.smembers, self.kv.key("tenants")))

    def active(self, tenant: str, before: float | None = None) -> list[str]:
        """The tenant's counted ids (admitted before ``before``, when given)."""
        active, _, _ = self._keys(tenant)
        return list(self.kv.call("read active jobs", self.kv.client.zrangebyscore, active,
                                 "-inf", "+inf" if before is None else f"({before}"))

    def waiting(self, tenant: str) -> list[str]:
        return list(self.kv.call("read waiting jobs", self.kv.client.lrange,
                                 self._keys(tenant)[2], 0, -1))

    def dispatched(self, tenant: str) -> set[str]:
        return set(self.kv.call("read dispatched jobs", self.kv.client.smembers, self._keys(tenant)[1]))


def stale(ids: Iterable[str], raws: Iterable[str | None], finished: Iterable[str]) -> list[str]:
    """The ids whose job record is gone (``None``) or says a finished status (pure): what the
    sweeper releases."""
    import json

    done = set(finished)
    return [job_id for job_id, raw in zip(ids, raws)
            if raw is None or json.loads(raw).get("status") in done]
