"""Celery task names, their queues, and how a job is sent to its task by name.

The API sends tasks by name and never imports the task code (or the Celery app's module); the
tasks register under these names and the app routes them to these queues.
"""
from __future__ import annotations

from typing import Any

from plugin.service.jobs import JobKind

QUEUES = ("match", "rerank", "verify", "ingest", "webhooks")
#: job kind → task name; the API sends tasks by name and never imports the task code
TASKS = {JobKind.POST: "factsieve.process_post", JobKind.VERIFY: "factsieve.verify",
         JobKind.RERANK: "factsieve.rerank", JobKind.INGEST: "factsieve.ingest",
         JobKind.EVIDENCE: "factsieve.ingest_evidence"}
DELIVER = "factsieve.deliver_webhook"
#: one planned tipline message (``plugin.channels.outbox``), on the webhooks queue
CHANNEL_SEND = "factsieve.send_channel_message"
#: a claim the desk answered: its tipline askers' messages planned (``plugin.service.tipline``)
ANSWER_ASKERS = "factsieve.answer_askers"
ROUTES = {TASKS[JobKind.POST]: "match", TASKS[JobKind.VERIFY]: "verify",
          TASKS[JobKind.RERANK]: "rerank", TASKS[JobKind.INGEST]: "ingest",
          TASKS[JobKind.EVIDENCE]: "ingest", DELIVER: "webhooks", CHANNEL_SEND: "webhooks", ANSWER_ASKERS: "webhooks"}


def job_sender(app: Any) -> Any:
    """Send a job (its record) to its task, under the job's id, at a broker priority (on Redis
    lower is served first; ``JobStore`` decides it): ``Services.send_job`` and the API's sends."""
    def send(job: dict[str, Any], priority: int | None = None) -> Any:
        return app.send_task(TASKS[JobKind(job["kind"])], args=[job["id"]], task_id=job["id"],
                             priority=priority)

    return send


def delivery_sender(app: Any) -> Any:
    """Send one planned webhook delivery to its task under its own id (a re-run never sends
    twice): the workers' handlers and ``Services.send_delivery`` (the review desk's events)."""
    def send(delivery_id: str) -> Any:
        return app.send_task(DELIVER, args=[delivery_id], task_id=delivery_id)

    return send


def channel_sender(app: Any) -> Any:
    """Send one planned tipline message to its task under its own id (a re-run never sends
    twice): ``Services.send_channel``."""
    def send(message_id: str) -> Any:
        return app.send_task(CHANNEL_SEND, args=[message_id], task_id=message_id)

    return send


def answers_sender(app: Any) -> Any:
    """Send a claim's answer to its askers to its task (``Services.send_answers``), under an id
    made from the claim and the fact-check (the task may still run twice: its messages are
    planned under ids of what they answer, so nothing is sent twice)."""
    import hashlib

    def send(tenant: str, claim_id: str, factcheck: dict[str, Any]) -> Any:
        tid = "ans_" + hashlib.sha256(f"{tenant}\x1f{claim_id}\x1f{factcheck.get('id')}".encode()).hexdigest()[:24]
        return app.send_task(ANSWER_ASKERS, args=[tenant, claim_id, factcheck], task_id=tid)

    return send
