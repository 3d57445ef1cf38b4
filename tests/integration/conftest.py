"""Fixtures for the HTTP API and worker tests: a namespaced deployment per session.

Everything the session writes is namespaced by a random tag: Redis keys (and Celery queues)
under ``fs-test-<tag>:``, the fact-check alias ``fs-test-api-<tag>`` and the jobs alias
``fs-test-jobs-<tag>``, all deleted at the end. Workers are real ``factsieve worker``
subprocesses (solo pool) over the real Redis; webhooks go to a real HTTP server on 127.0.0.1,
whose origin (``http://127.0.0.1:<port>``) is the only loopback one a deployment allows.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from tests.conftest import FIXTURES, ROOT, delete_components

API_FACTCHECKS = FIXTURES / "api" / "factchecks.jsonl"
#: The local llama.cpp server `scripts/services.sh up` starts (SmolLM2-135M-Instruct).
LOCAL_LLM = "http://127.0.0.1:8089/v1"


def namespaced(settings, tag: str, **extra: Any):
    """Test settings: a private Redis namespace and indexes, fast retries, and no loopback
    webhook origin allowed unless ``webhook_allowed_hosts`` names it (a receiver's ``origin``)."""
    return settings.model_copy(update={
        "redis_prefix": f"fs-test-{tag}", "index": f"fs-test-api-{tag}",
        "jobs_index": f"fs-test-jobs-{tag}", "webhook_allowed_hosts": (),
        "webhook_timeout_s": 2.0, "webhook_max_attempts": 3, "webhook_backoff_s": 0.2,
        "webhook_backoff_max_s": 1.0, "broker_visibility_timeout_s": 4, "task_max_retries": 2,
        "task_time_limit_s": 120, "evidence_index": f"fs-test-ev-{tag}",
        "review_index": f"fs-test-review-{tag}", "decisions_index": f"fs-test-dec-{tag}",
        "posts_index": f"fs-test-posts-{tag}", "claims_index": f"fs-test-claims-{tag}",
        "llm_url": settings.llm_url or LOCAL_LLM, **extra})


def settings_env(settings) -> dict[str, str]:
    """The ``FACTSIEVE_*`` environment that rebuilds ``settings`` in a subprocess."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FACTSIEVE_")}
    env["FACTSIEVE_ENV_FILE"] = ""  # no settings file: exactly these settings
    for name in type(settings).model_fields:
        value = getattr(settings, name)
        if value is None:
            continue
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        elif isinstance(value, tuple):
            value = ",".join(value)
        elif isinstance(value, bool):
            value = "true" if value else "false"
        env[f"FACTSIEVE_{name.upper()}"] = str(value)
    return env


def cleanup_deployment(settings, store) -> None:
    from plugin.kv import KV

    KV(settings).delete_namespace()
    from plugin.settings import POST_INDEXES

    for alias in (settings.index, settings.jobs_index, settings.evidence_index,
                  *(getattr(settings, n) for n in POST_INDEXES)):
        store.delete_index(f"{alias}-v*")
        store.delete_index_template(f"factsieve-{alias}")
        delete_components(store, alias)


def wait_for(condition: Callable[[], Any], timeout: float = 30.0, interval: float = 0.1,
             what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


class Worker:
    """A ``factsieve worker`` subprocess in its own process group (so kill -9 takes it all)."""

    def __init__(self, settings, log_path: Path, queues: str | None = None) -> None:
        self.log_path = log_path
        cmd = [sys.executable, "-m", "cli.main", "worker", "--pool", "solo", "--concurrency", "1",
               "--loglevel", "INFO", "--hostname", f"test-{uuid.uuid4().hex[:6]}@%h"]
        if queues:
            cmd += ["--queues", queues]
        self.log = open(log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=settings_env(settings), stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        wait_for(self._ready, timeout=60, what=f"the worker to start (log: {log_path})")

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"the worker exited with {self.proc.returncode}: "
                                 f"{self.log_path.read_text(errors='replace')[-3000:]}")
        return b" ready." in self.log_path.read_bytes()

    def kill9(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.log.close()


class Receiver:
    """A webhook receiver on 127.0.0.1: records every request; ``/fail-then-ok/...`` answers 500
    to the first request of each delivery id and 200 afterwards, ``/status/<code>`` that code."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    seen = [r for r in receiver.requests
                            if r["headers"].get("X-FactSieve-Delivery") == self.headers.get("X-FactSieve-Delivery")]
                    receiver.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                code = 200
                if self.path.startswith("/status/"):
                    code = int(self.path.split("/")[2])
                elif self.path.startswith("/fail-then-ok") and not seen:
                    code = 500
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        #: what a deployment allows to reach this receiver: its origin, not all of 127.0.0.1
        self.origin = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"{self.origin}{path}"

    def received(self, path: str) -> list[dict[str, Any]]:
        with self.lock:
            return [r for r in self.requests if r["path"] == path]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- fixtures ---------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


@pytest.fixture(scope="session")
def down_origin() -> str:
    """An allowed origin nothing listens on: deliveries to it fail to connect."""
    return f"http://127.0.0.1:{closed_port()}"


@pytest.fixture(scope="session")
def channel_fakes():
    """The fake Telegram and WhatsApp APIs (``plugin.lab.channel_fakes``)."""
    from plugin.lab.channel_fakes import ChannelFakes

    fakes = ChannelFakes()
    yield fakes
    fakes.close()


@pytest.fixture(scope="session")
def api_settings(settings, receiver, down_origin, channel_fakes):
    return namespaced(settings, uuid.uuid4().hex[:10],
                      webhook_allowed_hosts=(receiver.origin, down_origin),
                      telegram_api_url=channel_fakes.telegram_url, whatsapp_api_url=channel_fakes.whatsapp_url)


@pytest.fixture(scope="session")
def api_services(api_settings, store, embedder):
    from plugin.service.services import Services

    services = Services(api_settings, store=store, embedder=embedder)
    yield services
    cleanup_deployment(api_settings, store)


@pytest.fixture(scope="session")
def api_corpus(api_services):
    """The API fixture fact-checks, ingested into the session's alias."""
    from plugin.ingest import Format, ingest, read_records

    api_services.factchecks.ensure()
    report = ingest(read_records([API_FACTCHECKS], Format.jsonl), store=api_services.store,
                    embedder=api_services.embedder, index=api_services.settings.index)
    assert report.rejected == 0, report.rejects
    return api_services.settings.index


@pytest.fixture(scope="session")
def app(api_services):
    from api import create_app

    return create_app(api_services.settings, services=api_services)


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture(scope="session")
def write_key(api_services) -> str:
    from plugin.service.keys import Scope

    return api_services.keys.create("tests (write)", Scope.WRITE)[1]


@pytest.fixture(scope="session")
def read_key(api_services) -> str:
    from plugin.service.keys import Scope

    return api_services.keys.create("tests (read)", Scope.READ)[1]


@pytest.fixture
def auth(write_key) -> dict[str, str]:
    return {"Authorization": f"Bearer {write_key}"}


@pytest.fixture(scope="session")
def worker(api_services, api_corpus, tmp_path_factory) -> Iterator[Worker]:
    w = Worker(api_services.settings, tmp_path_factory.mktemp("worker") / "worker.log")
    yield w
    w.stop()


def poll_job(client, headers, job_id: str, timeout: float = 60.0) -> dict[str, Any]:
    def finished() -> dict[str, Any] | None:
        body = client.get(f"/v1/jobs/{job_id}", headers=headers).get_json()
        return body if body["status"] in ("succeeded", "failed") else None

    return wait_for(finished, timeout=timeout, interval=0.1, what=f"job {job_id}")


def problem_of(resp) -> dict[str, Any]:
    """The response's problem body, after checking it is one."""
    assert resp.mimetype == "application/problem+json", (resp.status_code, resp.data[:300])
    body = json.loads(resp.data)
    assert body["status"] == resp.status_code
    assert {"type", "title", "detail"} <= set(body)
    return body


@pytest.fixture
def fc_client(api_settings, store, embedder, make_alias):
    """A client whose fact-check alias is this test's own."""
    from api import create_app
    from plugin.service.services import Services

    settings = api_settings.model_copy(update={"index": make_alias()})
    app = create_app(settings, services=Services(settings, store=store, embedder=embedder))
    return app.test_client()
