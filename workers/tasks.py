"""Thin Celery tasks: take an id, call ``plugin``, persist the outcome, handle retries.

Every task may run more than once for one id (acks_late + reject_on_worker_lost redeliver the
job of a killed worker): a job that already finished is skipped, and deliveries are deduplicated
by ``plugin.service.webhooks``. Transient backend outages are retried with exponential backoff; any
other error fails the job with a problem body, never a traceback.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celery import Task, shared_task
from celery.exceptions import SoftTimeLimitExceeded
from celery.utils.log import get_task_logger

from plugin.service import handlers
from plugin.errors import BackendUnavailable, FactSieveError, LLMNotConfigured, NotFound, problem
from plugin.service.jobs import JobStatus
from plugin.service.services import Services
from plugin.net.outbound import backoff_delay
from workers.app import services_of
from workers.names import ANSWER_ASKERS, CHANNEL_SEND, DELIVER, delivery_sender

log = get_task_logger(__name__)


def _run(task: Task, job_id: str, runner: Callable[..., dict[str, Any]], *extra: Any) -> dict[str, Any]:
    services: Services = services_of(task.app)
    jobs = services.jobs
    try:
        job = jobs.get(job_id)
    except NotFound:
        log.warning("job %s is gone (expired or Redis flushed); nothing to do", job_id)
        return {"job_id": job_id, "status": "missing"}
    if JobStatus(job["status"]).finished:
        return {"job_id": job_id, "status": job["status"], "skipped": True}
    # starts that neither finished nor asked for a retry: each was a worker that died under it
    deaths = int(job.get("attempts", 0)) - task.request.retries
    if deaths >= services.settings.job_max_deliveries:
        jobs.fail(job_id, problem(500, "Job abandoned",
                                  f"the job was started {deaths} times and its worker died each time"))
        return {"job_id": job_id, "status": JobStatus.FAILED.value}
    job = jobs.start(job_id)
    try:
        result = runner(services, job, *extra)
        jobs.finish(job_id, result)
    except LLMNotConfigured as exc:  # no retry can configure it
        jobs.fail(job_id, exc.to_problem())
    except BackendUnavailable as exc:
        retries = task.request.retries
        if retries < services.settings.task_max_retries:
            delay = backoff_delay(retries + 1, 2.0, 300.0)
            jobs.requeue(job_id, exc.to_problem(), delay)
            # max_retries=None on every job task: this check is the only limit
            raise task.retry(exc=exc, countdown=delay) from None
        jobs.fail(job_id, exc.to_problem())
    except FactSieveError as exc:
        jobs.fail(job_id, exc.to_problem())
    except SoftTimeLimitExceeded:
        jobs.fail(job_id, problem(504, "Job timed out", "the job ran longer than "
                                  f"{task.soft_time_limit or 'the time limit'} s"))
    except Exception:  # a bug: fail the job without leaking the traceback to the API
        log.exception("job %s failed", job_id)
        jobs.fail(job_id, problem(500, "Internal error",
                                  "the job failed unexpectedly; the worker log has details"))
    return {"job_id": job_id, "status": jobs.get(job_id)["status"]}


@shared_task(bind=True, name="factsieve.verify", max_retries=None)
def verify(self: Task, job_id: str) -> dict[str, Any]:
    return _run(self, job_id, handlers.run_verify, _delivery_sender(self))


@shared_task(bind=True, name="factsieve.rerank", max_retries=None)
def rerank(self: Task, job_id: str) -> dict[str, Any]:
    return _run(self, job_id, handlers.run_rerank)


@shared_task(bind=True, name="factsieve.ingest", max_retries=None)
def ingest(self: Task, job_id: str) -> dict[str, Any]:
    return _run(self, job_id, handlers.run_ingest)


@shared_task(bind=True, name="factsieve.ingest_evidence", max_retries=None)
def ingest_evidence(self: Task, job_id: str) -> dict[str, Any]:
    return _run(self, job_id, handlers.run_evidence)


@shared_task(bind=True, name="factsieve.process_post", max_retries=None)
def process_post(self: Task, job_id: str) -> dict[str, Any]:
    return _run(self, job_id, handlers.run_post, _delivery_sender(self))


def _delivery_sender(task: Task) -> Callable[[str], None]:
    """Enqueue one planned webhook delivery under its own id (so a re-run never sends twice)."""
    return delivery_sender(task.app)  # type: ignore[no-any-return]


@shared_task(bind=True, name=DELIVER, max_retries=None)
def deliver_webhook(self: Task, delivery_id: str) -> str:
    """One attempt; on failure the retry is scheduled with the subscription store's backoff."""
    try:
        outcome = services_of(self.app).webhooks.attempt(delivery_id)
    except NotFound:
        return "missing"
    except BackendUnavailable as exc:
        raise self.retry(exc=exc, countdown=backoff_delay(self.request.retries + 1, 2.0, 300.0)) from None
    if outcome.retry_in is not None:
        raise self.retry(countdown=outcome.retry_in)
    return outcome.status.value


@shared_task(bind=True, name=CHANNEL_SEND, max_retries=None)
def send_channel_message(self: Task, message_id: str) -> str:
    """One attempt of a tipline message (``plugin.channels.outbox.attempt``); the next is
    scheduled after Telegram's ``retry_after``, WhatsApp's rate limit or the backoff."""
    from plugin.channels.outbox import attempt

    services = services_of(self.app)
    try:
        retry_in = attempt(services.settings, services.channels, message_id)
    except BackendUnavailable as exc:
        raise self.retry(exc=exc, countdown=backoff_delay(self.request.retries + 1, 2.0, 300.0)) from None
    if retry_in is not None:
        raise self.retry(countdown=retry_in)
    return "done"


@shared_task(bind=True, name=ANSWER_ASKERS, max_retries=None)
def answer_askers(self: Task, tenant: str, claim_id: str, factcheck: dict[str, Any]) -> int:
    """The desk confirmed ``factcheck`` for a post of ``claim_id``: everyone waiting on the claim
    gets it (``plugin.service.tipline.answer_claim``; idempotent, so a retry sends nothing twice)."""
    from plugin.service.tipline import answer_claim

    services = services_of(self.app)
    try:
        return answer_claim(services, tenant, claim_id, factcheck, services.queue_message)
    except BackendUnavailable as exc:
        raise self.retry(exc=exc, countdown=backoff_delay(self.request.retries + 1, 2.0, 300.0)) from None
