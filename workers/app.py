"""The Celery application factory, from the same settings object as everything else.

Redis is broker and result backend, every key under ``<redis_prefix>:celery:``. Tasks are
acknowledged late and rejected back to the queue when their worker dies, so a job a killed
worker held runs again (the visibility timeout decides when); the tasks are idempotent for that.
"""
from __future__ import annotations

import logging
import threading
from typing import Any

from celery import Celery

from plugin.service.admission import PRIORITY_STEPS
from plugin.service.jobs import JobKind
from plugin.service.services import Services
from plugin.settings import Settings

log = logging.getLogger(__name__)

QUEUES = ("match", "rerank", "verify", "ingest", "webhooks")
#: job kind → task name; the API sends tasks by name and never imports the task code
TASKS = {JobKind.POST: "factsieve.process_post", JobKind.VERIFY: "factsieve.verify",
         JobKind.RERANK: "factsieve.rerank", JobKind.INGEST: "factsieve.ingest",
         JobKind.EVIDENCE: "factsieve.ingest_evidence"}
DELIVER = "factsieve.deliver_webhook"
ROUTES = {TASKS[JobKind.POST]: "match", TASKS[JobKind.VERIFY]: "verify",
          TASKS[JobKind.RERANK]: "rerank", TASKS[JobKind.INGEST]: "ingest",
          TASKS[JobKind.EVIDENCE]: "ingest", DELIVER: "webhooks"}


def celery_config(settings: Settings) -> dict[str, Any]:
    """The Celery settings (pure; tested)."""
    keyprefix = f"{settings.redis_prefix}:celery:"
    vt = settings.broker_visibility_timeout_s
    return {
        "broker_url": settings.redis_url,
        "result_backend": settings.redis_url,
        "broker_transport_options": {
            "global_keyprefix": keyprefix, "visibility_timeout": vt,
            # look for messages of dead workers often enough for the visibility timeout
            "unacked_restore_interval": max(1, min(10, vt // 4)), "unacked_restore_throttle": 1,
            "socket_connect_timeout": 5, "socket_timeout": 30,
            # one Redis list per priority, lowest number served first (plugin.service.admission);
            # queues are still taken round-robin at each priority (no queue_order_strategy);
            # senders and workers must agree: a worker with other steps misses some lists
            "priority_steps": list(PRIORITY_STEPS), "sep": ":",
        },
        "result_backend_transport_options": {"global_keyprefix": keyprefix},
        "result_expires": settings.job_ttl_s,
        "task_serializer": "json", "result_serializer": "json", "accept_content": ["json"],
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "task_time_limit": settings.task_time_limit_s,
        "task_soft_time_limit": max(1, int(settings.task_time_limit_s * 0.9)),
        "task_default_queue": "match",
        "task_routes": {name: {"queue": queue} for name, queue in ROUTES.items()},
        "task_publish_retry_policy": {"max_retries": 2, "interval_start": 0,
                                      "interval_step": 0.5, "interval_max": 1},
        "worker_concurrency": settings.worker_concurrency,
        "broker_connection_retry_on_startup": True,
        "worker_cancel_long_running_tasks_on_connection_loss": True,
    }


def create_celery(settings: Settings, services: Services | None = None) -> Celery:
    app = Celery("factsieve", include=["workers.tasks"])
    app.conf.update(celery_config(settings))
    app.factsieve = services or Services(settings)  # type: ignore[attr-defined]
    app.factsieve.send_job = job_sender(app)  # type: ignore[attr-defined]
    return app


def job_sender(app: Celery) -> Any:
    """Send a job (its record) to its task, under the job's id, at a broker priority (on Redis
    lower is served first; ``JobStore`` decides it): ``Services.send_job`` and the API's sends."""
    def send(job: dict[str, Any], priority: int | None = None) -> Any:
        return app.send_task(TASKS[JobKind(job["kind"])], args=[job["id"]], task_id=job["id"],
                             priority=priority)

    return send


def start_sweeper(app: Celery, interval_s: float) -> threading.Event:
    """A daemon thread in the worker's main process that sweeps stuck jobs every ``interval_s``
    (``workers.tasks.run_sweep``; a Redis lock keeps several workers from sweeping at once).
    No beat process to run or schedule file to keep. Returns the event that stops it."""
    from workers.tasks import run_sweep

    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(interval_s):
            try:
                run_sweep(app)
            except Exception:  # a sweep that fails (Redis down) is tried again next time
                log.warning("job sweep failed", exc_info=True)

    threading.Thread(target=loop, name="factsieve-job-sweeper", daemon=True).start()
    return stop


def services_of(app: Celery) -> Services:
    return app.factsieve  # type: ignore[attr-defined,no-any-return]
