"""The recalibration schedule: a thread in each worker's main process that refits a tenant's
confidence once enough new decisions arrived (``plugin.learn.calibration_store.refit_due``).

The house's way for periodic work, like the job sweeper (``workers.sweeper``): no Celery beat
process to deploy or keep single, a Redis lock so that one worker checks at a time. A check is a
count per tenant, and a refit reads one tenant's decisions and fits two numbers per language
(a second for 1,000 decisions), so it runs in the thread, not as a task.
"""
from __future__ import annotations

import logging
import threading
from typing import Any

from workers.app import services_of

log = logging.getLogger(__name__)


def start_recalibrator(app: Any, interval_s: float) -> threading.Event:
    """A daemon thread that runs the check every ``interval_s``; returns the event that stops it."""
    from plugin.learn.calibration_store import refit_due

    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(interval_s):
            try:
                services = services_of(app)
                out = refit_due(services.review, services.recalibrations, services.kv, services.settings)
                if out["refitted"] or out["refused"]:
                    log.info("recalibration check: %s", out)
            except Exception:  # a check that fails (OpenSearch or Redis down) is tried next time
                log.warning("recalibration check failed", exc_info=True)

    threading.Thread(target=loop, name="factsieve-recalibrator", daemon=True).start()
    return stop
