"""The hostile probes' rig: a throwaway loopback deployment (gunicorn, two workers, a webhook
receiver), keys for every role and tenant, and the plumbing every probe uses (a call that
restarts gunicorn when the client gives up, one JSON line per outcome, job waits, counts).
``scripts/hostile_probes.py`` holds the probes themselves."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import requests

CLIENT_TIMEOUT_S = 10.0
#: server-side seconds a request on the language-detection class may take (the issue: < 50 ms
#: for detection itself; matching and embedding come on top: an evidence body embeds up to
#: FACTSIEVE_SYNC_EVIDENCE_MAX_PASSAGES passages in the request, ~28 for 20,000 characters)
FAST_S = {"match": 1.0, "fact-checks": 3.0, "evidence": 8.0, "posts": 1.0, "verify": 1.0}
#: how long an async probe waits for its job
JOB_WAIT_S = 45.0
#: small body limits, so that an "over the limit" probe sends ~1–2 MB (the image routes' limit is
#: the JSON one plus an image of ``image_max_bytes`` in base64: 1 MiB holds the dense-text probe)
LIMITS = {"max_request_bytes": 1024 * 1024, "max_json_bytes": 64 * 1024,
          "sync_ingest_max_bytes": 64 * 1024, "image_max_bytes": 1024 * 1024, "rate_limit_requests": 300}
#: ``FACTSIEVE_TENANT_MAX_ACTIVE_JOBS`` in the probed deployment, so the flood reaches it quickly
JOB_CAP = 20
FLOOD_MAX = 200
#: the issue's inputs, cut to the API's 20,000-character text limit ("http://" * 3000 is 21,000)
EVIL_TEXTS = {"at20000": "@" * 20000, "a_at10000": "a@" * 10000, "http3000": ("http://" * 3000)[:20000]}
#: the language-detection probes give up sooner: their pass mark is 1 to 8 s
LANG_TIMEOUT_S = 10.0
PROBLEM_JSON = "application/problem+json"


# the webhook receiver and the free-port helper are the integration tests' own (loopback only)
from tests.integration.conftest import Receiver, closed_port  # noqa: E402


def port_of(url: str, default: int) -> int:
    return urlsplit(url.split(",")[0]).port or default


# -- the run ------------------------------------------------------------------------------------
class Outcome(dict):
    """One probe's line."""


class HostileRig:
    def __init__(self, checks: Any) -> None:
        """``checks``: the ``api_checks`` module (its ``Deployment``, ``env_for``, ``Scope``)."""
        self.checks = checks
        self.tag = uuid.uuid4().hex[:8]
        self.receiver = Receiver()
        self.password = f"pw-{self.tag}-secret"
        self.llm_port = closed_port()
        overrides: dict[str, Any] = {
            **LIMITS, "tenant_max_active_jobs": JOB_CAP,
            "llm_url": f"http://hostile-user:{self.password}@127.0.0.1:{self.llm_port}/v1",
            "task_max_retries": 1, "task_time_limit_s": 30, "webhook_timeout_s": 2.0,
            "webhook_max_attempts": 2, "webhook_backoff_s": 0.2, "webhook_backoff_max_s": 1.0,
            "evidence_index": f"fs-bench-ev-{self.tag}",
            "webhook_allowed_hosts": (f"http://127.0.0.1:{self.receiver.port}",)}
        self.dep = checks.Deployment(2, serve_args=("--timeout", "20"), **overrides)
        self.workers: list[subprocess.Popen] = []
        self.worker_logs: list[str] = []
        s = self.dep.settings
        self.os_port = port_of(s.opensearch_url, 9200)
        self.redis_port = port_of(s.redis_url, 6379)
        Scope = checks.Scope
        keys = self.dep.services.keys
        self.key = {"write": self.dep.key,
                    "read": keys.create("hostile read", Scope.READ)[1],
                    "admin": keys.create("hostile admin", Scope.ADMIN)[1],
                    "a": keys.create("hostile tenant a", Scope.WRITE, tenant="a")[1],
                    "b": keys.create("hostile tenant b", Scope.WRITE, tenant="b")[1],
                    "flood": keys.create("hostile flood", Scope.READ, tenant="flood")[1],
                    "calm": keys.create("hostile calm", Scope.READ, tenant="calm")[1],
                    "rate": keys.create("hostile rate", Scope.READ)[1]}
        self.results: list[Outcome] = []

    # -- plumbing ------------------------------------------------------------------------------
    def markers(self) -> list[str]:
        """Strings no reply may carry: the LLM credentials, backend addresses, physical indexes."""
        s = self.dep.settings
        return [self.password, "hostile-user", f"127.0.0.1:{self.os_port}", f"127.0.0.1:{self.redis_port}",
                f"127.0.0.1:{self.llm_port}", f"{s.index}-v", f"{s.jobs_index}-v", f"{s.evidence_index}-v"]

    def leaks(self, text: str, sent: str = "") -> bool:
        return any(m in text and m not in sent for m in self.markers())

    def call(self, method: str, path: str, key: str | None = "write", *, timeout: float = CLIENT_TIMEOUT_S,
             headers: dict[str, str] | None = None, **kw: Any) -> tuple[requests.Response | None, float]:
        h = dict(headers or {})
        if key is not None:
            h["Authorization"] = f"Bearer {self.key[key]}"
        t0 = time.perf_counter()
        try:
            resp = requests.request(method, f"{self.dep.base}{path}", headers=h, timeout=timeout, **kw)
        except requests.RequestException:  # timed out, or the connection dropped
            secs = round(time.perf_counter() - t0, 3)
            self.recover()
            return None, secs
        return resp, round(time.perf_counter() - t0, 3)

    def recover(self) -> None:
        """A request the client gave up on holds a gunicorn worker: start gunicorn again."""
        self.dep.restart()
        self.warm()

    def warm(self) -> None:
        """Match a few ordinary posts first, so that no probe's seconds count a gunicorn worker's
        first match (the configuration's query tower loads then)."""
        from concurrent.futures import ThreadPoolExecutor

        def one(_: int) -> None:
            requests.post(f"{self.dep.base}/v1/match", json={"text": "warming up the matcher"},
                          headers={"Authorization": f"Bearer {self.key['write']}"}, timeout=120)

        # concurrently, so that every sync worker (busy with one request) takes some
        with ThreadPoolExecutor(self.dep.workers) as pool:
            for _ in range(3):
                list(pool.map(one, range(self.dep.workers)))

    def record(self, probe: str, resp: requests.Response | None, seconds: float, ok: bool, expected: str,
               *, lost: int | None = None, leaked: bool | None = None, detail: str = "",
               sent: str = "", status: Any = None) -> Outcome:
        if status is None:
            status = resp.status_code if resp is not None else "timeout"
        if leaked is None:
            leaked = self.leaks(resp.text, sent) if resp is not None else False
        if resp is not None and resp.status_code >= 400 and not ok:
            # what the server said, shortened (and without anything leaked)
            said = resp.text if resp.headers.get("Content-Type", "").endswith("json") else resp.text[:80]
            detail = "; ".join(filter(None, [detail, said.replace(self.password, "<password>")]))
        out = Outcome(probe=probe, status=status, seconds=seconds, lost_records=lost, leaked=leaked,
                      **{"pass": bool(ok and not leaked and not lost)}, expected=expected,
                      detail=detail[:300])
        self.results.append(out)
        print(json.dumps(out, ensure_ascii=False), flush=True)
        return out

    def wait_job(self, job_id: str, key: str = "write", timeout: float = JOB_WAIT_S,
                 until: Callable[[dict[str, Any]], bool] | None = None) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        until = until or (lambda j: j.get("status") in ("succeeded", "failed"))
        while time.monotonic() < deadline:
            resp, _ = self.call("GET", f"/v1/jobs/{job_id}", key)
            if resp is not None and resp.ok and until(resp.json()):
                return resp.json()
            time.sleep(0.3)
        return None

    def start_workers(self) -> None:
        env = self.checks.env_for(self.dep.settings)
        for i, queues in enumerate(("match,ingest,webhooks,rerank", "verify")):
            log = tempfile.NamedTemporaryFile(prefix=f"factsieve-hostile-worker{i}-", suffix=".log",
                                              delete=False)
            self.worker_logs.append(log.name)
            self.workers.append(subprocess.Popen(
                [sys.executable, "-m", "cli.main", "worker", "--pool", "solo", "--concurrency", "1",
                 "--loglevel", "INFO", "--hostname", f"hostile{i}-{self.tag}@%h", "--queues", queues],
                cwd=self.checks.ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True))
        deadline = time.monotonic() + 90
        for proc, path in zip(self.workers, self.worker_logs):
            while b" ready." not in open(path, "rb").read():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"a worker did not start; log: {path}")
                time.sleep(0.3)

    def close(self) -> None:
        for proc in self.workers:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        self.receiver.close()
        try:
            self.dep.services.store.delete_index(f"{self.dep.settings.evidence_index}-v*")
            self.dep.services.store.delete_index_template(f"factsieve-{self.dep.settings.evidence_index}")
        finally:
            self.dep.close()

    def count(self, alias: str, query: dict[str, Any]) -> int:
        store = self.dep.services.store
        if not store.index_exists(alias):
            return 0
        store.refresh(alias)
        body = {"size": 0, "track_total_hits": True, "query": query}
        return int(store.search(alias, body)["hits"]["total"]["value"])

    # -- deployment variants -------------------------------------------------------------------
    def receiver_url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.receiver.port}{path}"
