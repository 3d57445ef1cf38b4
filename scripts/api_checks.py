#!/usr/bin/env python
"""Measurements of the HTTP API against a real `factsieve serve` (loopback only). Not a test.

  .venv/bin/python scripts/api_checks.py load [--requests 2000] [--concurrency 1,8] [--seconds 60]
  .venv/bin/python scripts/api_checks.py schemathesis [--max-examples 25] [--seconds 300]
  .venv/bin/python scripts/api_checks.py posts [--celery-workers 1,2] [--posts 200] [--opensearch URL,..] [--replicas N]
  .venv/bin/python scripts/api_checks.py fairness [--flood 40] [--quiet 8] [--fifo]
  .venv/bin/python scripts/api_checks.py hostile
  .venv/bin/python scripts/api_checks.py tipline [--texts 40] [--photos 15]

Each run makes its own deployment (Redis prefix, fact-check alias with the bundled samples,
jobs alias, API key), starts gunicorn with 2 workers on a free 127.0.0.1 port, measures, prints
one JSON object, and deletes everything it made. `schemathesis` installs schemathesis into
.cache/schemathesis-venv (kept apart from the project's venv: it brings a pytest plugin).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from plugin.service.keys import Scope  # noqa: E402
from plugin.settings import POST_INDEXES, Settings  # noqa: E402

SCHEMATHESIS = "schemathesis==4.32.5"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env_for(settings: Settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FACTSIEVE_")}
    for name in Settings.model_fields:
        value = getattr(settings, name)
        if value is None:
            continue
        if hasattr(value, "get_secret_value"):
            value = value.get_secret_value()
        elif isinstance(value, tuple):
            value = ",".join(value)
        env[f"FACTSIEVE_{name.upper()}"] = str(value)
    return env


class Deployment:
    """A throwaway deployment: namespaced settings, the sample corpus, a key, gunicorn."""

    def __init__(self, workers: int, *, serve_args: tuple[str, ...] = (), **overrides) -> None:
        from plugin.ingest import Format, ingest, read_records
        from plugin.service.services import Services

        tag = uuid.uuid4().hex[:8]
        # every alias a post writes is the deployment's own (``POST_INDEXES``), or its posts,
        # review items, decisions and claims would land in the real ones
        self.settings = Settings().model_copy(update={
            "redis_prefix": f"fs-bench-{tag}", "index": f"fs-bench-{tag}",
            "jobs_index": f"fs-bench-jobs-{tag}",
            **{n: f"fs-bench-{n.removesuffix('_index')}-{tag}" for n in POST_INDEXES}, **overrides})
        self.services = Services(self.settings)
        self.services.factchecks.ensure()
        files = [ROOT / "samples" / "clef2020" / "factchecks.jsonl",
                 ROOT / "samples" / "multiclaim" / "factchecks.jsonl"]
        report = ingest(read_records(files, Format.jsonl), store=self.services.store,
                        embedder=self.services.embedder, index=self.settings.index)
        self.corpus = report.indexed + report.updated
        self.key = self.services.keys.create("api_checks", Scope.WRITE)[1]
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.workers, self.serve_args = workers, serve_args
        self.log = tempfile.NamedTemporaryFile(prefix="factsieve-serve-", suffix=".log", delete=False)
        self.serve()

    def serve(self) -> None:
        """Start gunicorn (its own process group) and wait until every worker has the model."""
        workers = self.workers
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "serve", "--port", str(self.port), "--workers", str(workers),
             *self.serve_args],
            cwd=ROOT, env=env_for(self.settings), stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True)
        deadline = time.monotonic() + 60
        while True:
            try:
                if requests.get(f"{self.base}/healthz", timeout=5).ok:
                    break
            except requests.RequestException:  # not listening yet, or slow on a busy machine
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                if self.proc.poll() is None:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                raise SystemExit(f"gunicorn did not start; log: {self.log.name}")
            time.sleep(0.2)
        for _ in range(workers * 4):  # every worker loads the model before measuring
            requests.get(f"{self.base}/readyz", timeout=60)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    def restart(self) -> None:
        """Kill gunicorn and its workers at once (one may hang on a request) and serve again,
        with ``self.settings`` as they are now."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.serve()

    def close(self, keep_index: bool = False) -> None:
        """Stop the server and delete what the deployment made (``keep_index``: not the
        fact-check index, for a benchmark that reuses it)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.services.kv.delete_namespace()
        own = (self.settings.jobs_index, *(getattr(self.settings, n) for n in POST_INDEXES))
        for alias in own if keep_index else (self.settings.index, *own):
            self.services.store.delete_index(f"{alias}-v*")
            self.services.store.delete_index_template(f"factsieve-{alias}")


def sample_posts() -> list[str]:
    texts = []
    for path in (ROOT / "samples" / "clef2020" / "queries.jsonl", ROOT / "samples" / "multiclaim" / "queries.jsonl"):
        texts += [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return texts


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def run_load(dep: Deployment, posts: list[str], requests_n: int, concurrency: int, seconds: float) -> dict:
    """Closed loop: ``concurrency`` client threads, each sending its next request on an answer."""
    local = threading.local()
    counter = iter(range(requests_n))
    lock = threading.Lock()
    deadline = time.monotonic() + seconds
    latencies: list[float] = []
    server_ms: list[float] = []
    statuses: dict[str, int] = {}

    def session() -> requests.Session:
        if not hasattr(local, "s"):
            local.s = requests.Session()
            local.s.headers.update(dep.headers)
        return local.s

    def one() -> None:
        while time.monotonic() < deadline:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            t0 = time.perf_counter()
            took = None
            try:
                resp = session().post(f"{dep.base}/v1/match", json={"text": posts[i % len(posts)], "k": 10},
                                      timeout=30)
                key = str(resp.status_code)
                if resp.status_code == 200:
                    took = resp.json()["took_ms"]
            except requests.RequestException as exc:
                key = type(exc).__name__
            elapsed = (time.perf_counter() - t0) * 1e3
            with lock:
                latencies.append(elapsed)
                statuses[key] = statuses.get(key, 0) + 1
                if took is not None:
                    server_ms.append(took)

    load_before = os.getloadavg()
    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        for _ in range(concurrency):
            pool.submit(one)
    wall = time.perf_counter() - t0
    return {"client_threads": concurrency, "requests": len(latencies),
            "errors": sum(n for k, n in statuses.items() if k != "200"), "statuses": statuses,
            "wall_s": round(wall, 2), "requests_per_s": round(len(latencies) / wall, 1),
            "latency_ms": {"p50": round(percentile(latencies, 50), 1),
                           "p95": round(percentile(latencies, 95), 1),
                           "p99": round(percentile(latencies, 99), 1),
                           "mean": round(statistics.fmean(latencies), 1)},
            # the matcher's own time inside the API (took_ms): the rest is HTTP, auth and queueing
            "matcher_ms": {"p50": round(percentile(server_ms, 50), 1),
                           "p95": round(percentile(server_ms, 95), 1)} if server_ms else None,
            # the 1-minute load average before and after: other work on the machine shows here
            "loadavg_1m": [round(load_before[0], 2), round(os.getloadavg()[0], 2)]}


def cmd_load(args: argparse.Namespace) -> dict:
    dep = Deployment(args.workers, rate_limit_requests=10_000_000)
    try:
        posts = sample_posts()
        run_load(dep, posts, 40, 2, 60)  # warm-up, not reported
        levels = [int(c) for c in str(args.concurrency).split(",")]
        runs = [run_load(dep, posts, args.requests, c, args.seconds) for c in levels]
        return {"what": "POST /v1/match, closed-loop load", "gunicorn_workers": args.workers,
                "corpus_factchecks": dep.corpus, "cpus": os.cpu_count(), "runs": runs}
    finally:
        dep.close()


def ensure_schemathesis() -> Path:
    venv = ROOT / ".cache" / "schemathesis-venv"
    st = venv / "bin" / "st"
    if not st.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", SCHEMATHESIS], check=True)
    return st


def cmd_schemathesis(args: argparse.Namespace) -> dict:
    st = ensure_schemathesis()
    # no loopback origin allowed: generated webhook URLs must not reach anything on this machine
    dep = Deployment(args.workers, rate_limit_requests=10_000_000)
    report = Path(tempfile.mkdtemp(prefix="factsieve-st-"))
    try:
        cmd = [str(st), "run", f"{dep.base}/openapi.json", "--header", f"Authorization: Bearer {dep.key}",
               "--checks", "all", "--max-examples", str(args.max_examples), "--seed", str(args.seed),
               "--max-time", str(args.seconds), "--workers", "2", "--request-timeout", "30",
               "--report", "ndjson", "--report-ndjson-path", str(report / "events.ndjson"),
               "--no-color", "--generation-database", "none"]
        proc = subprocess.run(cmd, cwd=report, capture_output=True, text=True)
        (report / "stdout.txt").write_text(proc.stdout)
        cases, statuses, findings = 0, {}, {}
        for line in (report / "events.ndjson").read_text().splitlines():
            event = json.loads(line)
            for code in _status_codes(event):
                cases += 1
                statuses[code] = statuses.get(code, 0) + 1
            for finding in _findings(event):
                findings.setdefault(json.dumps(finding, sort_keys=True), 0)
                findings[json.dumps(finding, sort_keys=True)] += 1
        return {"what": "schemathesis against /openapi.json", "version": SCHEMATHESIS,
                "exit_code": proc.returncode, "requests": cases,
                "server_errors_5xx": sum(n for c, n in statuses.items() if c >= 500),
                "statuses": dict(sorted(statuses.items())),
                # each failed check once: its code, operation, the answer's status and detail
                "findings": [{**json.loads(k), "times": n} for k, n in sorted(findings.items())],
                "summary": proc.stdout[-4000:]}
    finally:
        dep.close()
        if not args.keep_report:
            shutil.rmtree(report, ignore_errors=True)


def _findings(event: dict) -> list[dict]:
    """The failed checks of a schemathesis ``ScenarioFinished`` event (4.x ndjson layout)."""
    import base64

    recorder = (event.get("ScenarioFinished") or {}).get("recorder") or {}
    out = []
    for case_id, checks in (recorder.get("checks") or {}).items():
        for check in checks:
            if check.get("status") == "success":
                continue
            failure = (check.get("failure_info") or {}).get("failure") or {}
            response = (recorder.get("interactions") or {}).get(case_id, {}).get("response") or {}
            content = (response.get("content") or {}).get("$base64")
            detail = ""
            if content:
                text = base64.b64decode(content).decode("utf-8", "replace")
                try:
                    detail = str(json.loads(text).get("detail", ""))
                except (ValueError, AttributeError):
                    detail = text
            out.append({"code": failure.get("code"), "title": failure.get("title"),
                        "operation": failure.get("operation"), "status": response.get("status_code"),
                        "detail": detail[:100]})
    return out


def _status_codes(event: object) -> list[int]:
    """Every HTTP response status in a schemathesis ndjson event (its layout varies by version)."""
    found = []
    if isinstance(event, dict):
        response = event.get("response")
        if isinstance(response, dict) and isinstance(response.get("status_code"), int):
            found.append(response["status_code"])
        for key, value in event.items():
            if key != "response":
                found += _status_codes(value)
    elif isinstance(event, list):
        for value in event:
            found += _status_codes(value)
    return found


def start_workers(dep: Deployment, n: int, queues: str = "match") -> list[subprocess.Popen]:
    """``n`` worker processes (``factsieve worker``, one task at a time each) for the deployment."""
    procs = []
    for i in range(n):
        log = tempfile.NamedTemporaryFile(prefix=f"factsieve-worker{i}-", suffix=".log", delete=False)
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "cli.main", "worker", "--pool", "solo", "--concurrency", "1",
             "--hostname", f"bench{i}-{uuid.uuid4().hex[:6]}@%h", "--queues", queues],
            cwd=ROOT, env=env_for(dep.settings), stdout=log, stderr=subprocess.STDOUT))
    return procs


def stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


def _wait(dep: Deployment, job_ids: list[str], timeout_s: float) -> dict[str, int]:
    deadline = time.monotonic() + timeout_s
    pending = set(job_ids)
    done: dict[str, int] = {}
    while pending and time.monotonic() < deadline:
        for job_id in list(pending):
            status = requests.get(f"{dep.base}/v1/jobs/{job_id}", headers=dep.headers, timeout=30).json()["status"]
            if status in ("succeeded", "failed"):
                pending.discard(job_id)
                done[status] = done.get(status, 0) + 1
        time.sleep(0.2)
    if pending:
        done["unfinished"] = len(pending)
    return done


def cmd_posts(args: argparse.Namespace) -> dict:
    """Posts/s and where the time goes, per number of worker processes (``posts_throughput``)."""
    import posts_throughput as pt

    # every post is submitted at once: the per-tenant admission limit is not what is measured
    dep = Deployment(1, rate_limit_requests=10_000_000, tenant_max_active_jobs=1_000_000,
                     **pt.overrides(args.opensearch, args.replicas))
    try:
        runs = [pt.run(sys.modules[__name__], dep, n, args.posts, args.timeout)
                for n in (int(x) for x in args.celery_workers.split(","))]
        return {"what": "POST /v1/posts, all at once, until every job finished (match + webhook planning)",
                **pt.describe(dep), "corpus_factchecks": dep.corpus, "cpus": os.cpu_count(), "runs": runs}
    finally:
        dep.close()
        pt.drop_extra_indexes(dep)


def run_fairness_phase(dep: Deployment, quiet: dict[str, str], flood: dict[str, str] | None,
                       n_quiet: int, n_flood: int, timeout_s: float) -> dict:
    """The quiet tenant's queue waits (job ``created_at`` → ``started_at``) for a burst of
    ``n_quiet`` posts, submitted after ``n_flood`` posts of the flooding tenant (none: idle)."""
    posts = sample_posts()

    def submit(headers: dict[str, str], i: int) -> str:
        resp = requests.post(f"{dep.base}/v1/posts", headers=headers, timeout=30,
                             json={"id": f"f-{uuid.uuid4().hex}", "text": posts[i % len(posts)]})
        if resp.status_code != 202:
            raise SystemExit(f"POST /v1/posts answered {resp.status_code}: {resp.text[:300]}")
        return resp.json()["job_id"]

    flood_ids = [submit(flood, i) for i in range(n_flood)] if flood else []
    quiet_ids = [submit(quiet, i) for i in range(n_quiet)]
    statuses = _wait(dep, quiet_ids, timeout_s)
    waits = []
    for job_id in quiet_ids:
        job = requests.get(f"{dep.base}/v1/jobs/{job_id}", headers=quiet, timeout=30).json()
        if job.get("started_at"):
            waits.append((datetime.fromisoformat(job["started_at"])
                          - datetime.fromisoformat(job["created_at"])).total_seconds())
    flood_done = _wait(dep, flood_ids, timeout_s) if flood_ids else {}
    return {"quiet_jobs": n_quiet, "flood_jobs": n_flood, "quiet_statuses": statuses,
            "flood_statuses": flood_done,
            "quiet_wait_s": {"p50": round(percentile(waits, 50), 3), "p95": round(percentile(waits, 95), 3),
                             "max": round(max(waits), 3)} if waits else None}


def cmd_fairness(args: argparse.Namespace) -> dict:
    """Two tenants on one worker process: the quiet tenant's p95 queue wait for a burst of posts
    when idle, then behind the other tenant's flood (its whole quota). With round-robin
    admission the quiet burst shares the worker with the flood instead of queueing behind it;
    with priorities by tenant load its jobs go before the flood's."""
    slots = 10**6 if args.fifo else args.slots
    dep = Deployment(1, rate_limit_requests=10_000_000, tenant_max_active_jobs=max(args.flood, args.quiet),
                     tenant_max_dispatched_jobs=slots)
    dep.key = dep.services.keys.create("api_checks (admin)", Scope.ADMIN)[1]  # _wait sees every tenant's jobs
    procs = start_workers(dep, 1)
    try:
        quiet, flood = ({"Authorization": f"Bearer {dep.services.keys.create(t, Scope.WRITE, t)[1]}"}
                        for t in ("quiet", "flood"))
        # warm-up: the worker loads the model on its first post
        run_fairness_phase(dep, quiet, None, 2, 0, args.timeout)
        idle = run_fairness_phase(dep, quiet, None, args.quiet, 0, args.timeout)
        flooded = run_fairness_phase(dep, quiet, flood, args.quiet, args.flood, args.timeout)
        idle_p95 = (idle["quiet_wait_s"] or {}).get("p95")
        flooded_p95 = (flooded["quiet_wait_s"] or {}).get("p95")
        return {"what": "quiet tenant's p95 queue wait (created_at -> started_at), idle vs. while "
                        "another tenant floods (POST /v1/posts, 1 Celery worker process)",
                "admission": "fifo (no per-tenant dispatch limit)" if args.fifo
                             else f"round-robin, {slots} dispatched job(s) per tenant, "
                                  "broker priority by tenant load",
                "idle_p95_s": idle_p95, "flooded_p95_s": flooded_p95,
                "ratio": round(flooded_p95 / idle_p95, 2) if idle_p95 and flooded_p95 else None,
                "idle": idle, "flooded": flooded, "corpus_factchecks": dep.corpus, "cpus": os.cpu_count(),
                "loadavg_1m": round(os.getloadavg()[0], 2)}
    finally:
        stop(procs)
        dep.close()


def cmd_hostile(args: argparse.Namespace) -> dict:
    """Issue 21's probes (``scripts/hostile_probes.py``); prints its own lines and exits."""
    import hostile_probes

    raise SystemExit(hostile_probes.run(sys.modules[__name__]))


def cmd_tipline(args: argparse.Namespace) -> dict:
    """A tipline user's wait for the first reply, text and photo (``tipline_bench``)."""
    import tipline_bench as tb

    return tb.run(sys.modules[__name__], sample_posts(), args.texts, args.photos, args.timeout)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    load = sub.add_parser("load", help="/v1/match latency and throughput")
    load.add_argument("--requests", type=int, default=2000)
    load.add_argument("--concurrency", default="1,8", help="client threads; several levels comma-separated")
    load.add_argument("--seconds", type=float, default=60)
    load.add_argument("--workers", type=int, default=2)
    st = sub.add_parser("schemathesis", help="property-based API tests from /openapi.json")
    st.add_argument("--max-examples", type=int, default=25)
    st.add_argument("--seconds", type=int, default=300)
    st.add_argument("--seed", type=int, default=1)
    st.add_argument("--workers", type=int, default=2)
    st.add_argument("--keep-report", action="store_true", help="keep schemathesis' NDJSON events")
    posts = sub.add_parser("posts", help="posts/s through the queue with 1, 2 … Celery worker processes")
    posts.add_argument("--celery-workers", default="1,2")
    posts.add_argument("--posts", type=int, default=200)
    posts.add_argument("--timeout", type=float, default=600)
    posts.add_argument("--opensearch", help="node URLs, comma-separated (scripts/services.sh up --nodes 3)")
    posts.add_argument("--replicas", type=int, help="FACTSIEVE_INDEX_REPLICAS of the run's indexes")
    fair = sub.add_parser("fairness", help="one tenant's queue wait while another floods the queue")
    fair.add_argument("--flood", type=int, default=40, help="the flooding tenant's posts (its quota)")
    fair.add_argument("--quiet", type=int, default=8, help="the quiet tenant's burst of posts")
    fair.add_argument("--slots", type=int, default=1, help="FACTSIEVE_TENANT_MAX_DISPATCHED_JOBS")
    fair.add_argument("--fifo", action="store_true", help="no per-tenant dispatch limit: the old FIFO")
    fair.add_argument("--timeout", type=float, default=300)
    sub.add_parser("hostile", help="issue 21's hostile inputs against a served API and workers: "
                                   "one JSON line per probe, then a summary; exit 1 if any fails")
    tip = sub.add_parser("tipline", help="a tipline message's first reply, text and photo, through the fake "
                                         "Telegram API and one worker")
    tip.add_argument("--texts", type=int, default=40)
    tip.add_argument("--photos", type=int, default=15)
    tip.add_argument("--timeout", type=float, default=120)
    args = p.parse_args()
    result = {"load": cmd_load, "schemathesis": cmd_schemathesis, "posts": cmd_posts,
              "fairness": cmd_fairness, "hostile": cmd_hostile, "tipline": cmd_tipline}[args.command](args)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
