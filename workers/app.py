"""The Celery application factory, from the same settings object as everything else.

Redis is broker and result backend, every key under ``<redis_prefix>:celery:``. Tasks are
acknowledged late and rejected back to the queue when their worker dies, so a job a killed
worker held runs again (the visibility timeout decides when); the tasks are idempotent for that.
"""
from __future__ import annotations

from typing import Any

from celery import Celery

from plugin.service.admission import PRIORITY_STEPS
from plugin.service.services import Services
from plugin.settings import Settings
from workers.names import ROUTES, answers_sender, channel_sender, delivery_sender, job_sender


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
    app.factsieve.send_delivery = delivery_sender(app)  # type: ignore[attr-defined]
    app.factsieve.send_channel = channel_sender(app)  # type: ignore[attr-defined]
    app.factsieve.send_answers = answers_sender(app)  # type: ignore[attr-defined]
    return app


def services_of(app: Celery) -> Services:
    return app.factsieve  # type: ignore[attr-defined,no-any-return]
