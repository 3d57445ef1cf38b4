"""``api_checks.py posts``: posts/s through POST /v1/posts → Celery workers → OpenSearch, and
where the time goes.

For each number of worker processes: start them (``api_checks.start_workers``), warm them up,
sample the CPU counters over a few idle seconds (the baseline) and again (the machine's ``/proc/stat``; the workers', gunicorn's and this
client's processes; every OpenSearch node's ``_nodes/stats/process``; Redis' ``INFO cpu``),
submit the posts one after another, wait until every job has finished (read from Redis, oldest
first: no HTTP polling loads the API meanwhile), sample again, and read each job's record.
The accounting is ``plugin.lab.throughput`` (pure). Every index the run makes carries its own
``fs-bench-`` name and is deleted at the end.
"""
from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any

import requests

from plugin.lab import throughput as tp
from plugin.urls import redact_url

CLK_TCK = os.sysconf("SC_CLK_TCK")


def overrides(opensearch: str | None, replicas: int | None) -> dict[str, Any]:
    """The deployment's settings beyond ``Deployment``'s own: the cluster to target, replicas,
    and names of its own for the indexes a post writes (posts memory, review items, decisions)."""
    tag = uuid.uuid4().hex[:8]
    from plugin.settings import POST_INDEXES

    out: dict[str, Any] = {name: f"fs-bench-{name.removesuffix('_index')}-{tag}" for name in POST_INDEXES}
    if opensearch:
        out["opensearch_url"] = ",".join(u.strip().rstrip("/") for u in opensearch.split(",") if u.strip())
    if replicas is not None:
        out["index_replicas"] = replicas
    return out


def drop_extra_indexes(dep: Any) -> None:
    """Delete the posts, review and decisions indexes ``overrides`` named (and their templates)."""
    s = dep.settings
    from plugin.settings import POST_INDEXES

    for alias in (getattr(s, name) for name in POST_INDEXES):
        if alias.startswith("fs-bench-"):
            dep.services.store.delete_index(f"{alias}-v*")
            dep.services.store.delete_index_template(f"factsieve-{alias}")


def _pid_table() -> dict[int, tuple[int, int, int]]:
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                out[int(entry.name)] = tp.process_stat((entry / "stat").read_text())
            except (OSError, ValueError, IndexError):  # ended while we looked
                continue
    return out


def sample(dep: Any) -> dict[str, Any]:
    """Every CPU counter the run compares, at one moment."""
    redis = dep.services.kv.client.info("cpu")
    times = os.times()
    return {"at": time.perf_counter(), "proc_stat": tp.parse_proc_stat(Path("/proc/stat").read_text()),
            "pids": _pid_table(), "client_s": times.user + times.system,
            "nodes": dep.services.store.request("node stats", "GET", "/_nodes/stats/process,jvm"),
            "redis_s": float(redis.get("used_cpu_user", 0)) + float(redis.get("used_cpu_sys", 0))}


def account(before: dict[str, Any], after: dict[str, Any], dep: Any, workers: list[Any]) -> dict[str, Any]:
    """CPU seconds by component between two ``sample``s, and the machine's use."""
    nodes = tp.nodes_cpu_s(before["nodes"], after["nodes"])
    cpu_s = {"celery_workers": tp.tree_cpu_s(before["pids"], after["pids"], [p.pid for p in workers], CLK_TCK),
             "api_gunicorn": tp.tree_cpu_s(before["pids"], after["pids"], [dep.proc.pid], CLK_TCK),
             "opensearch": round(sum(nodes.values()), 3),
             "redis": round(after["redis_s"] - before["redis_s"], 3),
             "client": round(after["client_s"] - before["client_s"], 3)}
    heap = {n.get("name", nid): round(n["jvm"]["mem"]["heap_used_in_bytes"] / 2**20, 1)
            for nid, n in sorted(after["nodes"]["nodes"].items())}
    return {"cpu_s": cpu_s, "opensearch_nodes_cpu_s": nodes, "opensearch_heap_used_mb": heap,
            "machine": tp.machine_cpu(before["proc_stat"], after["proc_stat"])}


def idle_cores(used: dict[str, Any], seconds: float) -> dict[str, float]:
    """An ``account`` over a quiet interval as cores kept busy, by component and machine-wide."""
    out = {k: round(v / seconds, 3) for k, v in used["cpu_s"].items()}
    out["machine_busy_cores"] = used["machine"]["busy_cores"]
    return out


def wait_jobs(dep: Any, job_ids: list[str], timeout_s: float, poll_s: float = 0.25) -> dict[str, int]:
    """Wait until every job finished; each pass reads jobs oldest first and stops at the first
    one still pending (the queue is first in, first out: later ones are rarely done sooner)."""
    deadline = time.monotonic() + timeout_s
    pending = list(job_ids)
    done: dict[str, int] = {}
    while pending and time.monotonic() < deadline:
        while pending:
            status = dep.services.jobs.get(pending[0])["status"]
            if status not in ("succeeded", "failed"):
                break
            done[status] = done.get(status, 0) + 1
            pending.pop(0)
        if pending:
            time.sleep(poll_s)
    if pending:
        done["unfinished"] = len(pending)
    return done


def run(checks: ModuleType, dep: Any, n_workers: int, n_posts: int, timeout_s: float,
        idle_s: float = 5.0) -> dict[str, Any]:
    """One measurement with ``n_workers`` worker processes (``checks``: the api_checks module)."""
    posts = checks.sample_posts()

    def submit(prefix: str, i: int) -> str:
        resp = requests.post(f"{dep.base}/v1/posts", headers=dep.headers, timeout=30,
                             json={"id": f"{prefix}-{uuid.uuid4().hex}", "text": posts[i % len(posts)]})
        if resp.status_code != 202:
            raise SystemExit(f"POST /v1/posts answered {resp.status_code}: {resp.text[:300]}")
        return str(resp.json()["job_id"])

    procs = checks.start_workers(dep, n_workers)
    try:
        # warm-up: each worker loads the model on its first post
        wait_jobs(dep, [submit("warm", i) for i in range(2 * n_workers)], timeout_s)
        quiet = sample(dep)
        time.sleep(idle_s)  # what everything costs with no post in flight (the baseline)
        before = sample(dep)
        idle = account(quiet, before, dep, procs)
        t0 = time.perf_counter()
        jobs = [submit("p", i) for i in range(n_posts)]
        submit_s = time.perf_counter() - t0
        statuses = wait_jobs(dep, jobs, timeout_s)
        after = sample(dep)  # before the workers stop: their ticks leave with them
    finally:
        checks.stop(procs)
    wall = after["at"] - before["at"]
    used = account(before, after, dep, procs)
    summary = tp.jobs_summary([dep.services.jobs.get(j) for j in jobs])
    per_post = tp.cpu_per_post(used["cpu_s"], used["machine"], wall, n_posts)
    return {"celery_workers": n_workers, "posts": n_posts, "statuses": statuses,
            "seconds": round(wall, 1), "posts_per_s": summary.get("posts_per_s"),
            "client_posts_per_s": round(n_posts / wall, 2), "submit_s": round(submit_s, 2),
            "jobs": summary, **used, **per_post,
            # cores each component kept busy in the ``idle_s`` before, no post in flight: the
            # cluster's own background work, and other work on the machine (busy_cores)
            "idle_cores": idle_cores(idle, before["at"] - quiet["at"]),
            "limit": tp.limit_reading(used["machine"], per_post, summary.get("posts_per_s"), n_workers),
            "loadavg_1m": round(os.getloadavg()[0], 2)}


def describe(dep: Any) -> dict[str, Any]:
    """The deployment the runs measured: OpenSearch nodes (redacted URLs) and replicas."""
    urls = dep.settings.opensearch_url.split(",")
    health = dep.services.store.request("cluster health", "GET", "/_cluster/health")
    return {"opensearch": [redact_url(u) for u in urls], "opensearch_nodes": health.get("number_of_nodes"),
            "index_replicas": dep.settings.index_replicas, "cluster_status": health.get("status")}
