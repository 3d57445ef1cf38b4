"""The posts alias's monthly rollover and retention (``plugin.index.rolling.roll``): a thread in
each worker's main process, the house's way for periodic work (``workers.sweeper``). A pass is
three small reads, and at most one rollover and a few index deletions a month; passes from
several workers at once are safe (a second rollover to the same index is refused, a deleted
index is gone), so no lock. Where OpenSearch's Index State Management runs the policy, a pass
does nothing."""
from __future__ import annotations

import logging
import threading
import time
from typing import Any

from plugin.errors import BackendError
from workers.app import services_of

log = logging.getLogger(__name__)


def run_roll(app: Any, now_ms: int | None = None) -> dict[str, Any]:
    from plugin.index.rolling import roll

    services = services_of(app)
    settings = services.settings
    return roll(services.store, settings.posts_index, now_ms=now_ms or int(time.time() * 1000),
                retention_days=settings.posts_retention_days)


def start_roller(app: Any, interval_s: float) -> threading.Event:
    """A daemon thread that runs a pass now and every ``interval_s``; returns the event that stops it."""
    stop = threading.Event()

    def loop() -> None:
        while True:
            try:
                out = run_roll(app)
                if out["rolled_to"] or out["deleted"]:
                    log.info("posts rollover: %s", out)
            except BackendError as exc:
                if getattr(exc.__cause__, "status_code", None) == 403:  # a secured cluster's runtime role
                    log.warning("the posts index is not rolled by this worker: its OpenSearch identity may "
                                "not create or delete indexes. Run `factsieve posts roll` with the admin "
                                "identity from a daily schedule, or let Index State Management run the "
                                "policy `factsieve init` installs where the plugin is present.")
                    return
                log.warning("posts rollover pass failed", exc_info=True)
            except Exception:  # a pass that fails (OpenSearch down) is tried next time
                log.warning("posts rollover pass failed", exc_info=True)
            if stop.wait(interval_s):
                return

    threading.Thread(target=loop, name="factsieve-posts-roller", daemon=True).start()
    return stop
