"""``factsieve serve``: gunicorn (a production WSGI server) running ``create_app(settings)``.

A custom gunicorn application rather than ``gunicorn 'api:create_app()'`` so the settings object
built at the CLI edge is handed down instead of re-read. The app is built in each worker after
the fork (no preload), so no model or connection crosses a fork.
"""
from __future__ import annotations

from typing import Any

from gunicorn.app.base import BaseApplication

from plugin.settings import Settings


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
               "worker_class": "gthread" if threads > 1 else "sync",
               "accesslog": "-" if access_log else None, "errorlog": "-",
               "proc_name": "factsieve-api",
               # headers: gunicorn's own limits; bodies are limited by the app
               "limit_request_line": 8190, "limit_request_fields": 100}
    FactSieveServer(settings, options).run()
