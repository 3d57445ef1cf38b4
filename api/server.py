"""``factsieve serve``: gunicorn (a production WSGI server) running ``create_app(settings)``.

A custom gunicorn application rather than ``gunicorn 'api:create_app()'`` so the settings object
built at the CLI edge is handed down instead of re-read. The app is built in each worker after
the fork (no preload), so no model or connection crosses a fork.

gunicorn answers some requests itself, before the app sees them (a request line or headers over
its limits, a NUL or CR in a header, a worker stopped at its timeout); its own pages are HTML.
Our workers write those as ``application/problem+json`` like every other error of the API.
"""
from __future__ import annotations

import json
from typing import Any

from gunicorn import util
from gunicorn.app.base import BaseApplication
from gunicorn.workers.gthread import ThreadWorker
from gunicorn.workers.sync import SyncWorker

from plugin.errors import problem
from plugin.settings import Settings

#: gunicorn's message for a 500 may hold anything; clients get the app's sentence instead.
INTERNAL_DETAIL = "the request failed unexpectedly; the server log has details"
#: Characters of gunicorn's message (it may quote the offending request line) kept in ``detail``.
MAX_DETAIL_CHARS = 200


def problem_page(status: int, reason: str, message: str) -> bytes:
    """The whole HTTP/1.1 response gunicorn sends for an error of its own, as a problem.

    ASCII JSON (gunicorn writes latin-1; a quoted request line may hold anything) and
    ``Connection: close``, as gunicorn's HTML page has.
    """
    detail = INTERNAL_DETAIL if status >= 500 and not message else message[:MAX_DETAIL_CHARS]
    body = json.dumps(problem(status, reason, detail), ensure_ascii=True).encode("ascii")
    head = (f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\n"
            f"Content-Type: application/problem+json\r\nContent-Length: {len(body)}\r\n\r\n")
    return head.encode("ascii") + body


def write_problem(sock: Any, status: int, reason: str, message: str) -> None:
    """Drop-in for ``gunicorn.util.write_error`` (same arguments), the one call through which
    gunicorn's workers write their own error pages."""
    util.write_nonblock(sock, problem_page(status, reason, message))


class _ProblemPages:
    """gunicorn's own error pages as problems; a request stopped at the worker timeout as 503.

    On timeout the arbiter sends SIGABRT; the handler sets ``alive = False`` and raises
    ``SystemExit`` in the request, which the sync worker hands to ``handle_error`` (gunicorn
    writes a bare 500). The worker exits right after; a new one takes its place.
    """

    def init_process(self) -> None:
        util.write_error = write_problem  # this worker process only, before it serves anything
        super().init_process()  # type: ignore[misc]

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        if isinstance(exc, SystemExit) and not self.alive:  # type: ignore[attr-defined]
            limit = self.cfg.timeout  # type: ignore[attr-defined]
            self.log.critical("request stopped at the worker timeout (%s s)", limit)  # type: ignore[attr-defined]
            try:
                write_problem(client, 503, "Service Unavailable",
                              f"the request ran past the server's {limit} s limit and was stopped")
            except Exception:  # noqa: BLE001 - the client may be gone; the worker exits anyway
                pass
            return
        super().handle_error(req, client, addr, exc)  # type: ignore[misc]


class ProblemSyncWorker(_ProblemPages, SyncWorker):
    """gunicorn's sync worker, its own error pages as problems."""


class ProblemThreadWorker(_ProblemPages, ThreadWorker):
    """gunicorn's gthread worker, its own error pages as problems."""


class FactSieveServer(BaseApplication):
    def __init__(self, settings: Settings, options: dict[str, Any]) -> None:
        self.settings = settings
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            if value is not None and key in self.cfg.settings:
                self.cfg.set(key, value)

    def load(self) -> Any:
        from api import create_app

        return create_app(self.settings)


def serve(settings: Settings, *, host: str = "127.0.0.1", port: int = 8000, workers: int = 2,
          threads: int = 1, timeout: int = 60, access_log: bool = False) -> None:
    options = {"bind": f"{host}:{port}", "workers": workers, "threads": threads,
               "timeout": timeout, "graceful_timeout": 20, "keepalive": 5,
               "worker_class": ProblemThreadWorker if threads > 1 else ProblemSyncWorker,
               "accesslog": "-" if access_log else None, "errorlog": "-",
               "proc_name": "factsieve-api",
               # headers: gunicorn's own limits; bodies are limited by the app
               "limit_request_line": 8190, "limit_request_fields": 100}
    FactSieveServer(settings, options).run()
