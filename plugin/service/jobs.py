"""Job records: what the API hands to workers and what it reports back.

A job lives in Redis while it is queued or running (``<prefix>:job:<id>``, one JSON value, with
a TTL). A finished job is written to the OpenSearch jobs index *before* its Redis record says so,
so a Redis flush (or expiry) never loses a finished result: ``get`` falls back to OpenSearch.
Large inputs (fact-check uploads) sit beside the record and are dropped when the job ends.

Every new job is counted against its tenant's quota before its record is written, and handed to
Celery only when its tenant has a free dispatch slot; otherwise it waits, ``queued``, until one of
its tenant's jobs ends, with a broker priority from its tenant's load, so a tenant with few
jobs goes before one that floods (``plugin.service.admission`` explains the design).
"""
from __future__ import annotations

import hashlib
import json
import logging
import re
import secrets
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from enum import Enum
from typing import Any

from plugin.errors import BackendUnavailable, Conflict, FactSieveError, NotFound, public_problem
from plugin.service.admission import FIRST, REPAIR_GRACE_S, Admission, stale
from plugin.service.keys import DEFAULT_TENANT
from plugin.kv import KV
from plugin.settings import Settings
from plugin.index.store import Store
from plugin.index.templates import ensure_plain_index, install_plain_index, plain_index_bodies

log = logging.getLogger(__name__)

#: How a job becomes a broker message: ``send(job, priority)`` (``workers.names.job_sender``).
Send = Callable[[dict[str, Any], int], Any]

#: The fields of a job that hold a problem body; any key of the tenant reads them.
PROBLEM_FIELDS = ("error", "last_error", "previous_error")


def public_job(job: dict[str, Any]) -> dict[str, Any]:
    """``job`` with its problems as they may leave the process (``public_problem``: no backend
    addresses). Applied to every job written and read, so records written before the scrub
    existed leave as scrubbed as new ones."""
    if not any(isinstance(job.get(f), dict) for f in PROBLEM_FIELDS):
        return job
    return {**job, **{f: public_problem(job[f]) for f in PROBLEM_FIELDS if isinstance(job.get(f), dict)}}


class JobStatus(str, Enum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"

    @property
    def finished(self) -> bool:
        return self in (JobStatus.SUCCEEDED, JobStatus.FAILED)


class JobKind(str, Enum):
    VERIFY = "verify"
    RERANK = "rerank"
    INGEST = "ingest"
    POST = "post"
    EVIDENCE = "evidence"


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def new_job_id() -> str:
    return "job_" + secrets.token_hex(12)


#: What ``new_job_id`` and ``post_job_id`` make, and so all a job id can be.
JOB_ID = re.compile(r"(job|post)_[0-9a-f]{24}")


def _age(stamp: str | None, now: datetime) -> float:
    """Seconds since an ISO timestamp we wrote (an unreadable one counts as very old)."""
    try:
        return (now - datetime.fromisoformat(str(stamp))).total_seconds()
    except (TypeError, ValueError):
        return float("inf")


def post_job_id(post_id: str, tenant: str = DEFAULT_TENANT) -> str:
    """Deterministic, so resubmitting a post finds its job instead of making another; the tenant
    is part of it, so one newsroom cannot claim (or block) another's post ids. The pair is
    encoded unambiguously (a JSON array, under a prefix no earlier scheme used) for every
    tenant: no post id of one tenant hashes like another's."""
    key = "post-v2\x00" + json.dumps([tenant, post_id], ensure_ascii=False)
    return "post_" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


def legacy_post_job_id(post_id: str, tenant: str = DEFAULT_TENANT) -> str:
    """The id ``post_job_id`` gave before: the bare post id for the default tenant,
    ``"<tenant>\\x1f<post id>"`` for the others, which a default-tenant post id containing
    ``\\x1f`` could forge. Only read (jobs made then are still their owner's), and only
    trusted when ``owns`` says the job found there is that tenant's and that post's."""
    key = post_id if tenant == DEFAULT_TENANT else f"{tenant}\x1f{post_id}"
    return "post_" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


def owns(job: dict[str, Any], post_id: str, tenant: str) -> bool:
    """Whether ``job`` is ``tenant``'s job for the post ``post_id``."""
    return job.get("tenant", DEFAULT_TENANT) == tenant and job.get("ref") == post_id


def visible(job: dict[str, Any], tenant: str | None) -> bool:
    """Whether a key that sees ``tenant`` (``None``: every tenant, an admin) may see ``job``."""
    return tenant is None or job.get("tenant", DEFAULT_TENANT) == tenant


def fingerprint(obj: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def jobs_index_bodies(alias: str, replicas: int) -> tuple[str, dict[str, Any], str, dict[str, Any]]:
    """``(template name, template body, first index, its create body)`` for the jobs index (pure)."""
    return plain_index_bodies("jobs", alias, replicas)


class JobStore:
    def __init__(self, kv: KV, store: Store, settings: Settings,
                 send: Send | None = None) -> None:
        self.kv = kv
        self.store = store
        self.admission = Admission(kv, settings)
        #: hands a job to its Celery task (``workers.app.create_celery`` wires it): how a waiting
        #: job is sent when a slot frees. Without it the sweeper sends them.
        self.send = send
        self.alias = settings.jobs_index
        self.replicas = settings.index_replicas
        self.ttl = settings.job_ttl_s
        self._index_ready = False

    # -- the OpenSearch side ---------------------------------------------------------------------
    def ensure_index(self) -> None:
        """The jobs alias present with every field of the current mapping, once per process
        (``plugin.index.templates.ensure_plain_index``)."""
        if not self._index_ready:
            ensure_plain_index(self.store, "jobs", self.alias, self.replicas)
            self._index_ready = True

    def install(self) -> None:
        """Install the jobs template and create ``<alias>-v1`` behind the alias; idempotent
        (``factsieve init``; the admin identity on a secured cluster)."""
        install_plain_index(self.store, "jobs", self.alias, self.replicas)
        self._index_ready = True

    # -- Redis ---------------------------------------------------------------------------------
    def _key(self, job_id: str) -> str:
        # every id that reaches a Redis key is one we made: "job_x:body" must not read a body
        if not JOB_ID.fullmatch(job_id):
            raise NotFound(f"no job with id {job_id[:80]!r}")
        return self.kv.key("job", job_id)

    def _write(self, job: dict[str, Any], *, nx: bool = False) -> bool:
        raw = json.dumps(public_job(job), ensure_ascii=False, default=str)
        return bool(self.kv.call("write job", self.kv.client.set, self._key(job["id"]), raw,
                                 ex=self.ttl, nx=nx))

    def _find(self, job_id: str) -> dict[str, Any] | None:
        """The job under ``job_id`` wherever it is, or ``None``; an unreachable OpenSearch
        counts as not there (what ``create`` and ``post_job`` need: a lookup, not a read)."""
        live = self.kv.call("read job", self.kv.client.get, self._key(job_id))
        if live is not None:  # Redis holds the newest state (a resubmitted post's included)
            return public_job(json.loads(live))
        try:  # finished long ago: Redis may have forgotten it, OpenSearch has not
            found = self.store.find(self.alias, job_id)
        except BackendUnavailable:
            return None
        return public_job(found) if found is not None else None

    def post_job(self, post_id: str, tenant: str = DEFAULT_TENANT) -> str:
        """The id of ``tenant``'s job for ``post_id``: the one ``post_job_id`` makes, unless
        only a job made under the earlier scheme exists and it is that tenant's for that post
        (a job another tenant forged under the old id is not)."""
        current = post_job_id(post_id, tenant)
        if self._find(current) is None:
            old = self._find(legacy_post_job_id(post_id, tenant))
            if old is not None and owns(old, post_id, tenant):
                return old["id"]
        return current

    def create(self, kind: JobKind, input: dict[str, Any], *, job_id: str | None = None,
               ref: str | None = None, body: str | None = None,
               tenant: str = DEFAULT_TENANT) -> tuple[dict[str, Any], bool]:
        """Record a queued job. With a given ``job_id`` (deterministic ids make submissions
        idempotent) an existing job is returned instead; ``(job, created)``."""
        if job_id is not None:
            found = self._find(job_id)
            if found is not None:
                return found, False
        now = now_iso()
        job = {"id": job_id or new_job_id(), "kind": kind.value, "status": JobStatus.QUEUED.value,
               "created_at": now, "queued_at": now, "attempts": 0, "ref": ref, "input": input,
               "tenant": tenant}
        self.admission.reserve(tenant, job["id"], time.time())  # a 429 when the tenant is at its cap
        if body is not None:
            self.kv.call("write job body", self.kv.client.set, self._key(job["id"]) + ":body", body,
                         ex=self.ttl, nx=True)
        if self._write(job, nx=True):
            return job, True
        return self.get(job["id"]), False

    def submit_post(self, post: dict[str, Any], tenant: str = DEFAULT_TENANT, *,
                    body: str | None = None, extra: dict[str, Any] | None = None) -> tuple[dict[str, Any], bool]:
        """Record a post's job, idempotent on the post id: the same post again returns its job
        (``created`` false); the same id with different content is a ``Conflict``. ``body``: what
        the job reads beside its input (a post's image, which ``post`` names by digest);
        ``extra``: more of the job's input (a tipline message's ``channel``: ``plugin.service.tipline``)."""
        fp = fingerprint(post)
        job, created = self.create(JobKind.POST, {"post": post, "fingerprint": fp, **(extra or {})},
                                   job_id=self.post_job(post["id"], tenant), ref=post["id"],
                                   tenant=tenant, body=body)
        if not created and not owns(job, post["id"], tenant):
            # only a job id forged under the earlier scheme can be another's: say nothing of it
            raise Conflict(f"post id {post['id']!r} cannot be used; use a new id")
        if not created and job.get("input", {}).get("fingerprint") != fp:
            raise Conflict(f"post id {post['id']!r} was already submitted with different content; "
                           "use a new id for a new post")
        if not created and job.get("status") == JobStatus.FAILED.value:
            # a failed post can be submitted again: its job starts over under the same id
            self.admission.reserve(tenant, job["id"], time.time())
            now = now_iso()
            job = {"id": job["id"], "kind": JobKind.POST.value, "status": JobStatus.QUEUED.value,
                   "created_at": now, "queued_at": now, "attempts": 0, "ref": post["id"],
                   "input": job["input"], "previous_error": job.get("error"), "tenant": tenant}
            if body is not None:  # dropped when it failed
                self.kv.call("write job body", self.kv.client.set, self._key(job["id"]) + ":body",
                             body, ex=self.ttl)
            self._write(job)
            return job, True
        return job, created

    def get_post(self, post_id: str, tenant: str = DEFAULT_TENANT) -> dict[str, Any]:
        try:
            job = self.get(self.post_job(post_id, tenant), tenant)
        except NotFound:
            job = None
        if job is None or not owns(job, post_id, tenant):
            raise NotFound(f"no post with id {post_id[:200]!r}")
        return job

    def dispatch(self, job_id: str, send: Send, queue_url: str) -> None:
        """Hand a job to the queue with ``send``, at its tenant's priority, when its tenant has a
        free dispatch slot (else it waits for one: ``admission``). If the queue cannot be reached
        the job is recorded as failed (so its status never says "queued" forever) and
        ``BackendUnavailable`` naming ``queue_url`` is raised."""
        from kombu.exceptions import OperationalError

        job = self.get(job_id)
        tenant = job.get("tenant", DEFAULT_TENANT)
        if not self.admission.place(tenant, job_id):
            return
        priority = self.admission.priority(tenant)
        try:
            send(job, priority)
        except (OperationalError, ConnectionError, OSError) as exc:
            err = BackendUnavailable(f"the job queue (Redis at {queue_url}) is not reachable")
            try:
                self.fail(job_id, err.to_problem())
            except FactSieveError:
                pass  # Redis is down too: the queued record expires on its own
            raise err from exc

    def get(self, job_id: str, tenant: str | None = None) -> dict[str, Any]:
        """The job; with ``tenant``, only if it is that tenant's (another's answers 404, exactly
        as a job that does not exist: ids do not leak across newsrooms)."""
        raw = self.kv.call("read job", self.kv.client.get, self._key(job_id))
        found = json.loads(raw) if raw is not None else self.store.find(self.alias, job_id)
        if found is None or not visible(found, tenant):
            raise NotFound(f"no job with id {job_id!r}")
        return public_job(found)

    def body(self, job_id: str) -> str:
        raw = self.kv.call("read job body", self.kv.client.get, self._key(job_id) + ":body")
        if raw is None:
            raise NotFound(f"the input of job {job_id!r} is gone (expired or Redis was flushed)")
        return raw

    def start(self, job_id: str) -> dict[str, Any]:
        """Mark a job running and count the attempt (a redelivered job shows ``attempts`` > 1)."""
        job = self.get(job_id)
        job.update(status=JobStatus.RUNNING.value, started_at=now_iso(),
                   attempts=int(job.get("attempts", 0)) + 1)
        self._write(job)
        return job

    def progress(self, job_id: str, stage: str, turn: int | None = None) -> None:
        """Say where a running job is (``progress: {stage, turn, at}``); best effort: a Redis
        hiccup never fails the work it reports on."""
        try:
            job = self.get(job_id)
            job["progress"] = {"stage": stage, "turn": turn, "at": now_iso()}
            self._write(job)
        except FactSieveError:
            pass

    def finish(self, job_id: str, result: dict[str, Any]) -> dict[str, Any]:
        return self._end(job_id, JobStatus.SUCCEEDED, result=result)

    def fail(self, job_id: str, error: dict[str, Any]) -> dict[str, Any]:
        """Record a failure; kept in Redis even when OpenSearch is the thing that failed."""
        return self._end(job_id, JobStatus.FAILED, error=_recorded(job_id, "failed", error))

    def requeue(self, job_id: str, error: dict[str, Any], retry_in: float) -> dict[str, Any]:
        """Back to ``queued`` after a transient failure, saying why and when it runs again."""
        job = self.get(job_id)
        due = datetime.now(timezone.utc) + timedelta(seconds=retry_in)
        job.update(status=JobStatus.QUEUED.value, last_error=_recorded(job_id, "retried", error),
                   retry_in_s=round(retry_in, 1),
                   queued_at=due.isoformat(timespec="milliseconds"))
        self._write(job)
        return job

    def sweep(self, *, running_after_s: float, queued_after_s: float,
              resend: Send, now: datetime | None = None) -> dict[str, int]:
        """Jobs nothing will ever move again, moved: one ``running`` since longer than any task
        can run or be redelivered (its worker hit the hard time limit, or died and the broker
        lost the message) fails; one ``queued`` for longer than a broker message can wait (the
        message was lost, e.g. Redis restarted without persistence) is sent again with
        ``resend`` at priority ``FIRST`` (unless it waits for a dispatch slot of its tenant: then
        it has no message); whatever kept it waiting, a low priority included, it goes first now.
        First, dispatch slots that a dead worker never released are freed and filled
        (``_repair_admission``). Every worker calls this periodically; a Redis lock lets one
        sweep at a time."""
        if not self.kv.call("sweep lock", self.kv.client.set, self.kv.key("jobs-sweep-lock"), "1",
                            nx=True, ex=max(1, int(min(running_after_s, queued_after_s) / 2))):
            return {"swept": 0, "failed": 0, "resent": 0, "locked": 1}
        now = now or datetime.now(timezone.utc)
        released, admitted, waiting = self._repair_admission(now, resend)
        pattern = self.kv.key("job", "*")
        keys = [k for k in self.kv.call("scan jobs", lambda: list(self.kv.client.scan_iter(pattern, count=500)))
                if not str(k).endswith(":body")]
        out = {"swept": len(keys), "failed": 0, "resent": 0, "locked": 0,
               "released": released, "admitted": admitted}
        for start in range(0, len(keys), 500):
            raws = self.kv.call("read jobs", self.kv.client.mget, keys[start:start + 500])
            for raw in raws:
                if raw is None:
                    continue
                job = json.loads(raw)
                status = job.get("status")
                if status == JobStatus.RUNNING.value and _age(job.get("started_at"), now) > running_after_s:
                    self.fail(job["id"], {"type": "about:blank", "title": "Job abandoned", "status": 504,
                                          "detail": f"the job was still running after {running_after_s:.0f} s: "
                                                    "its worker hit the hard time limit or died"})
                    out["failed"] += 1
                elif (status == JobStatus.QUEUED.value and job["id"] not in waiting
                      and _age(job.get("queued_at") or job.get("created_at"), now) > queued_after_s):
                    job["queued_at"] = now.isoformat(timespec="milliseconds")
                    self._write(job)
                    resend(job, FIRST)
                    out["resent"] += 1
        return out

    def _end(self, job_id: str, status: JobStatus, **outcome: Any) -> dict[str, Any]:
        job = self.get(job_id)
        for transient in ("last_error", "retry_in_s", "progress"):
            job.pop(transient, None)
        job.update(status=status.value, finished_at=now_iso(), **outcome)
        job = public_job(job)
        try:
            self.ensure_index()
            self.store.put(self.alias, job_id, job)  # OpenSearch first: then Redis may forget it
        except BackendUnavailable:
            if status is JobStatus.SUCCEEDED:
                raise  # the caller retries; a result only Redis holds is not finished
        self._write(job)
        self.kv.call("drop job body", self.kv.client.delete, self._key(job_id) + ":body")
        tenant = job.get("tenant", DEFAULT_TENANT)
        self._send_admitted(tenant, self.admission.release(tenant, job_id), self.send)
        return job

    def _send_admitted(self, tenant: str, job_ids: list[str],
                       send: Send | None) -> int:
        """Send the jobs that just got a dispatch slot, at their tenant's priority (its load now,
        after the release); their ``queued_at`` restarts now, so a
        send that never happens (no ``send`` here, the broker down, this process dead) is a
        queued job without a message that the sweeper sends again in time. Best effort: never
        fails the job whose end freed the slot."""
        from kombu.exceptions import OperationalError

        sent = 0
        for job_id in job_ids:
            try:
                job = self.get(job_id)
                job["queued_at"] = now_iso()
                self._write(job)
                if send is not None:
                    send(job, self.admission.priority(tenant))
                    sent += 1
            except (FactSieveError, OperationalError, OSError):  # the sweeper sends it again
                log.warning("could not send admitted job %s of tenant %s", job_id, tenant, exc_info=True)
        return sent

    def _repair_admission(self, now: datetime,
                          resend: Send) -> tuple[int, int, set[str]]:
        """The sweeper's part in admission: slots still held by jobs that are finished or gone
        (their worker died before releasing them) are released, free slots are filled from the
        waiting lists, and those jobs sent. Returns ``(released, admitted, ids still waiting)``."""
        released = admitted = 0
        waiting: set[str] = set()
        cutoff = now.timestamp() - REPAIR_GRACE_S
        finished = [s.value for s in JobStatus if s.finished]
        for tenant in self.admission.tenants():
            ids = self.admission.active(tenant, before=cutoff)
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                raws = self.kv.call("read jobs", self.kv.client.mget, [self._key(i) for i in chunk])
                for job_id in stale(chunk, raws, finished):
                    admitted += self._send_admitted(tenant, self.admission.release(tenant, job_id), resend)
                    released += 1
            admitted += self._send_admitted(tenant, self.admission.release(tenant), resend)
            waiting.update(self.admission.waiting(tenant))
        return released, admitted, waiting


def _recorded(job_id: str, what: str, error: dict[str, Any]) -> dict[str, Any]:
    """``error`` as the job record keeps it (scrubbed); the worker log keeps where it happened."""
    public = public_problem(error)
    if public is not error and public != error:
        log.warning("job %s %s: %s", job_id, what, error.get("detail"))
    return public
