"""The job sweeper: a thread in each worker's main process that fails or resends stuck jobs (and
records the tipline's unanswered "did it help?" as timeouts)."""
from __future__ import annotations

import logging
import threading
from typing import Any

from plugin.service.jobs import JobKind
from workers.app import services_of
from workers.names import TASKS

log = logging.getLogger(__name__)


def run_sweep(app: Any) -> dict[str, int]:
    """Stuck jobs failed or sent again (``JobStore.sweep``), and the tipline's unanswered "did it
    help?" recorded as timeouts (``tipline.time_out``); each worker's sweeper thread calls it
    (``start_sweeper``)."""
    services = services_of(app)
    settings = services.settings
    limit = settings.task_time_limit_s

    def resend(job: dict[str, Any], priority: int) -> None:
        app.send_task(TASKS[JobKind(job["kind"])], args=[job["id"]], priority=priority)

    out = services.jobs.sweep(
        # running: past the hard limit, a redelivery by the broker, and that run's limit too
        running_after_s=settings.broker_visibility_timeout_s + 2 * limit + 60,
        # queued: longer than a message waits before the broker hands it out again
        queued_after_s=settings.broker_visibility_timeout_s + limit, resend=resend)
    from plugin.service.tipline import time_out

    return {**out, "tipline_timeouts": time_out(services, settings.tipline_feedback_timeout_s)}


def start_sweeper(app: Any, interval_s: float) -> threading.Event:
    """A daemon thread in the worker's main process that sweeps stuck jobs every ``interval_s``
    (``run_sweep``; a Redis lock keeps several workers from sweeping at once).
    No beat process to run or schedule file to keep. Returns the event that stops it."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(interval_s):
            try:
                run_sweep(app)
            except Exception:  # a sweep that fails (Redis down) is tried again next time
                log.warning("job sweep failed", exc_info=True)

    threading.Thread(target=loop, name="factsieve-job-sweeper", daemon=True).start()
    return stop
