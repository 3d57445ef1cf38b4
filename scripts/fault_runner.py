#!/usr/bin/env python
"""Faults, injected into a real deployment, and what they cost: one JSON line per scenario.

  .venv/bin/python scripts/fault_runner.py [--scenarios NAME,...] [--posts 12]

Each scenario makes its own deployment (``api_checks.Deployment``: Redis prefix, fact-check and
jobs aliases, sample corpus, API key, gunicorn), runs real ``factsieve worker`` processes, sends
posts through ``POST /v1/posts``, injects its fault, waits, and prints
``{"scenario", "requests", "errors_5xx", "failed_after_retry", "lost_jobs", "lost_docs",
"recovered_s", ...}``: ``lost_jobs`` counts jobs (and webhook deliveries) left neither succeeded
nor failed at the end, ``failed_after_retry`` those that ended failed. Not a test: it measures.

Scenarios: worker-kill (kill -9 a worker holding jobs, start another), webhook-gzip-bomb,
webhook-drip, webhook-500-then-200 (hostile or flaky receivers), opensearch-outage (OpenSearch
unreachable longer than the retry window: jobs fail, then the failed posts are submitted again).
redis-restart (posts queued, Redis restarted from its append-only file, then a worker),
poison-message (a job whose worker is killed every time it runs must end failed),
opensearch-node-kill (with ``--cluster``: kill -9 of one of 3 nodes under match and ingest load).
"""
from __future__ import annotations

import argparse
import gzip
import http.server
import json
import signal
import socket
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from api_checks import Deployment, sample_posts, start_workers, stop  # noqa: E402

#: short enough that a killed worker's job is redelivered within the run
FAST = {"broker_visibility_timeout_s": 8, "task_max_retries": 2, "task_time_limit_s": 120,
        "webhook_timeout_s": 2.0, "webhook_max_attempts": 3,
        "webhook_backoff_s": 0.5, "webhook_backoff_max_s": 1.0, "rate_limit_requests": 10_000_000}


class Counter:
    def __init__(self, dep: Deployment) -> None:
        self.dep, self.requests, self.errors_5xx = dep, 0, 0

    def call(self, method: str, path: str, **kw: Any) -> requests.Response:
        self.requests += 1
        resp = requests.request(method, f"{self.dep.base}{path}", headers=self.dep.headers, timeout=30, **kw)
        self.errors_5xx += resp.status_code >= 500
        return resp

    def post(self, text: str, post_id: str | None = None) -> str:
        body = {"id": post_id or f"f-{uuid.uuid4().hex}", "text": text}
        resp = self.call("POST", "/v1/posts", json=body)
        return resp.json()["job_id"] if resp.status_code == 202 else ""

    def wait(self, job_ids: list[str], timeout_s: float) -> dict[str, int]:
        deadline, pending, out = time.monotonic() + timeout_s, set(job_ids), {"succeeded": 0, "failed": 0}
        while pending and time.monotonic() < deadline:
            for job_id in list(pending):
                resp = self.call("GET", f"/v1/jobs/{job_id}")
                status = resp.json().get("status") if resp.status_code == 200 else None
                if status in ("succeeded", "failed"):
                    pending.discard(job_id)
                    out[status] += 1
            time.sleep(0.3)
        out["lost"] = len(pending)
        return out


def line(name: str, c: Counter, jobs: dict[str, int], recovered_s: float, **extra: Any) -> dict[str, Any]:
    return {"scenario": name, "requests": c.requests, "errors_5xx": c.errors_5xx,
            "failed_after_retry": jobs.get("failed", 0), "lost_jobs": jobs.get("lost", 0),
            "lost_docs": 0, "recovered_s": round(recovered_s, 1), **extra}


def worker_kill(n_posts: int) -> dict[str, Any]:
    dep = Deployment(1, **FAST)
    c = Counter(dep)
    workers = start_workers(dep, 2)
    try:
        posts = sample_posts()
        jobs = [c.post(posts[i % len(posts)]) for i in range(n_posts)]
        time.sleep(3)  # let both workers take jobs
        workers[0].send_signal(signal.SIGKILL)
        t0 = time.monotonic()
        workers += start_workers(dep, 1)
        result = c.wait(jobs, 300)
        return line("worker-kill", c, result, time.monotonic() - t0)
    finally:
        stop(workers)
        dep.close()


class Receiver:
    """A local webhook receiver with one behaviour: ``bomb``, ``drip`` or ``flaky`` (500, then 200)."""

    def __init__(self, behaviour: str) -> None:
        self.hits = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.hits += 1
                if behaviour == "bomb":  # 64 MB of zeros, 64 KB on the wire
                    body = gzip.compress(b"\0" * (64 << 20))
                    self.send_response(200)
                    self.send_header("Content-Encoding", "gzip")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                elif behaviour == "drip":  # a byte every 0.5 s, far past the deadline
                    self.send_response(200)
                    self.send_header("Content-Length", "1000")
                    self.end_headers()
                    try:
                        for _ in range(60):
                            self.wfile.write(b"x")
                            self.wfile.flush()
                            time.sleep(0.5)
                    except OSError:
                        pass
                else:
                    self.send_response(500 if outer.hits == 1 else 200)
                    self.send_header("Content-Length", "0")
                    self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        #: what the deployment allows: this receiver's origin, nothing else on 127.0.0.1
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.url = f"{self.origin}/hook"

    def close(self) -> None:
        self.server.shutdown()


def webhook(behaviour: str, name: str) -> dict[str, Any]:
    receiver = Receiver(behaviour)
    dep = Deployment(1, **FAST, webhook_allowed_hosts=(receiver.origin,))
    c = Counter(dep)
    workers = start_workers(dep, 1, queues="match,webhooks")
    try:
        sub = c.call("POST", "/v1/webhooks", json={"url": receiver.url, "events": ["post.matched"]}).json()
        t0 = time.monotonic()
        job = c.post("The new Covid-19 vaccines will permanently alter your DNA")
        result = c.wait([job], 120)
        deadline, log = time.monotonic() + 120, []
        while time.monotonic() < deadline:
            log = c.call("GET", f"/v1/webhooks/{sub['id']}/deliveries").json()["deliveries"]
            if log and all(d["status"] != "pending" for d in log):
                break
            time.sleep(0.5)
        pending = sum(d["status"] == "pending" for d in log) if log else 1
        failed = sum(d["status"] == "failed" for d in log)
        errors = [a.get("error") for d in log for a in d.get("attempts", []) if a.get("error")]
        alive = all(w.poll() is None for w in workers)
        return line(name, c, {"failed": result["failed"] + failed, "lost": result["lost"] + pending},
                    time.monotonic() - t0, receiver_hits=receiver.hits, worker_alive=alive,
                    delivery=[d["status"] for d in log], attempt_errors=errors[:3])
    finally:
        stop(workers)
        receiver.close()
        dep.close()


class Proxy:
    """A TCP proxy to OpenSearch that can be cut (``down``) and restored (``up``)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target, self.open = target, True
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            client, _ = self.sock.accept()
            if not self.open:
                client.close()
                continue
            upstream = socket.create_connection(self.target)
            self.conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.close()
                except OSError:
                    pass

    def down(self) -> None:
        self.open = False
        for s in self.conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.conns = []

    def up(self) -> None:
        self.open = True


def opensearch_outage(n_posts: int, outage_s: float = 25.0) -> dict[str, Any]:
    from plugin.settings import Settings

    target = Settings().opensearch_url.split("//", 1)[1].split("/", 1)[0]
    host, port = target.rsplit(":", 1)
    proxy = Proxy((host, int(port)))
    dep = Deployment(1, **FAST, opensearch_url=f"http://127.0.0.1:{proxy.port}", opensearch_timeout_s=3.0)
    c = Counter(dep)
    workers = start_workers(dep, 1)
    try:
        posts = sample_posts()
        ids = [f"o-{uuid.uuid4().hex}" for _ in range(n_posts)]
        proxy.down()
        t_down = time.monotonic()
        jobs = {pid: c.post(posts[i % len(posts)], pid) for i, pid in enumerate(ids)}
        first = c.wait([j for j in jobs.values() if j], outage_s + 120)  # they retry, then fail
        time.sleep(max(0.0, outage_s - (time.monotonic() - t_down)))
        proxy.up()
        t_up = time.monotonic()
        # a failed post can be submitted again: the same ids, the same texts
        again = [c.post(posts[i % len(posts)], pid) for i, pid in enumerate(ids)]
        second = c.wait([j for j in again if j], 180)
        return line("opensearch-outage", c, {"failed": second["failed"], "lost": first["lost"] + second["lost"]},
                    time.monotonic() - t_up, outage_s=outage_s, during_outage=first,
                    api_503_during_outage=c.errors_5xx)
    finally:
        stop(workers)
        proxy.up()
        dep.close()


class LocalRedis:
    """A Redis of its own (append-only file on, as ``scripts/services.sh`` starts it) that can be
    restarted."""

    def __init__(self) -> None:
        import shutil
        import tempfile

        self.dir = tempfile.mkdtemp(prefix="factsieve-redis-")
        self.bin = shutil.which("redis-server") or "redis-server"
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.start()

    def start(self) -> None:
        import subprocess

        subprocess.run([self.bin, "--bind", "127.0.0.1", "--port", str(self.port), "--dir", self.dir,
                        "--daemonize", "yes", "--save", "", "--appendonly", "yes",
                        "--appendfsync", "always", "--pidfile", f"{self.dir}/redis.pid"], check=True)
        for _ in range(50):
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.1)

    def stop(self) -> None:
        import subprocess

        subprocess.run(["redis-cli", "-p", str(self.port), "shutdown"], capture_output=True)
        time.sleep(0.5)


def redis_restart(n_posts: int) -> dict[str, Any]:
    """Posts queued, Redis restarted before any worker took them: nothing is lost (AOF)."""
    redis_ = LocalRedis()
    dep = Deployment(1, **FAST, redis_url=redis_.url)
    c = Counter(dep)
    workers: list = []
    try:
        posts = sample_posts()
        jobs = [c.post(posts[i % len(posts)]) for i in range(n_posts)]
        redis_.stop()
        t0 = time.monotonic()
        redis_.start()
        workers = start_workers(dep, 1)
        result = c.wait(jobs, 300)
        return line("redis-restart", c, result, time.monotonic() - t0)
    finally:
        stop(workers)
        dep.close()
        redis_.stop()


def poison_message() -> dict[str, Any]:
    """A job that kills its worker every time it runs (emulated: kill -9 as soon as it runs):
    after ``job_max_deliveries`` starts it fails instead of being delivered forever."""
    dep = Deployment(1, **FAST)
    c = Counter(dep)
    workers: list = []
    try:
        job = c.post("The new Covid-19 vaccines will permanently alter your DNA")
        t0, kills, seen = time.monotonic(), 0, 0
        final: dict[str, Any] = {}
        while time.monotonic() - t0 < 240:
            workers = start_workers(dep, 1)
            while time.monotonic() - t0 < 240:  # until the job runs again (or ends)
                final = c.call("GET", f"/v1/jobs/{job}").json()
                if final["status"] in ("succeeded", "failed") or final.get("attempts", 0) > seen:
                    break
                time.sleep(0.05)
            if final.get("status") in ("succeeded", "failed"):
                break
            seen = final.get("attempts", 0)
            workers[0].send_signal(signal.SIGKILL)  # the message "kills" its worker
            workers[0].wait()
            workers, kills = [], kills + 1
        final = c.call("GET", f"/v1/jobs/{job}").json()
        result = {"failed": int(final["status"] == "failed"), "lost": int(final["status"] not in ("succeeded", "failed"))}
        return line("poison-message", c, result, time.monotonic() - t0, worker_kills=kills,
                    final_status=final["status"], error=(final.get("error") or {}).get("detail"))
    finally:
        stop(workers)
        dep.close()


def opensearch_node_kill(cluster: str, seconds: float = 30.0) -> dict[str, Any]:
    """Matches and ingests without pause against a 3-node cluster (`scripts/services.sh up --nodes
    3`; indexes with one replica), ``kill -9`` of node 3 a third of the way in, the node started
    again at two thirds: failed API requests (the client retries on another node), fact-checks
    acknowledged but missing afterwards, and seconds until the cluster is green again."""
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    dep = Deployment(2, **FAST, opensearch_url=cluster, index_replicas=1)
    c = Counter(dep)
    acked: list[str] = []
    failed: list[int] = []
    stop_at = time.monotonic() + seconds
    posts = sample_posts()

    def matches() -> None:
        i = 0
        while time.monotonic() < stop_at:
            resp = c.call("POST", "/v1/match", json={"text": posts[i % len(posts)], "k": 5})
            if resp.status_code != 200:
                failed.append(resp.status_code)
            i += 1

    def ingests() -> None:
        while time.monotonic() < stop_at:
            rows = [{"id": f"nk-{uuid.uuid4().hex}", "claim": f"Node kill claim {uuid.uuid4().hex[:8]}",
                     "url": "https://example.org/nk"} for _ in range(5)]
            resp = c.call("POST", "/v1/fact-checks", json=rows)
            if resp.status_code == 200:
                acked.extend(r["id"] for r in rows)
            else:
                failed.append(resp.status_code)

    node_pid = Path(ROOT / ".cache" / "opensearch" / "cluster" / "node-3.pid")
    try:
        with ThreadPoolExecutor(3) as pool:
            jobs = [pool.submit(matches), pool.submit(matches), pool.submit(ingests)]
            time.sleep(seconds / 3)
            subprocess.run(["kill", "-9", node_pid.read_text().strip()], check=True)
            time.sleep(seconds / 3)
            subprocess.run([str(ROOT / "scripts" / "services.sh"), "node-up", "3", "3"], check=True,
                           capture_output=True)
            t_up = time.monotonic()
            for j in jobs:
                j.result()
        health = requests.get(f"{cluster.split(',')[0]}/_cluster/health",
                              params={"wait_for_status": "green", "timeout": "180s"}, timeout=200).json()
        recovered = time.monotonic() - t_up
        store = dep.services.store
        store.refresh(dep.settings.index)
        found = {h["_id"] for h in store.scan(dep.settings.index, {"query": {"prefix": {"id": "nk-"}},
                                                                    "_source": False})}
        lost = len(set(acked) - found)
        return line("opensearch-node-kill", c, {"failed": len(failed), "lost": 0}, recovered,
                    lost_docs=lost, docs_acknowledged=len(acked), final_status=health.get("status"),
                    failed_statuses=sorted(set(failed)))
    finally:
        dep.close()


SCENARIOS = {
    "opensearch-node-kill": lambda a: opensearch_node_kill(a.cluster) if a.cluster else
    {"scenario": "opensearch-node-kill", "skipped": "needs --cluster URLS (scripts/services.sh up --nodes 3)"},
    "poison-message": lambda a: poison_message(),
    "redis-restart": lambda a: redis_restart(a.posts),
    "worker-kill": lambda a: worker_kill(a.posts),
    "webhook-gzip-bomb": lambda a: webhook("bomb", "webhook-gzip-bomb"),
    "webhook-drip": lambda a: webhook("drip", "webhook-drip"),
    "webhook-500-then-200": lambda a: webhook("flaky", "webhook-500-then-200"),
    "opensearch-outage": lambda a: opensearch_outage(a.posts),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenarios", default=",".join(SCENARIOS))
    p.add_argument("--posts", type=int, default=12)
    p.add_argument("--cluster", help="a 3-node cluster's URLs, comma-separated, for opensearch-node-kill")
    args = p.parse_args()
    for name in args.scenarios.split(","):
        print(json.dumps(SCENARIOS[name](args)), flush=True)


if __name__ == "__main__":
    main()
