"""Where the time of posts through the queue goes: pure accounting over samples taken by
``scripts/posts_throughput.py`` (``scripts/api_checks.py posts``).

Inputs are what the machine and the services report: two ``/proc/stat`` texts, ``/proc/<pid>/stat``
lines, ``_nodes/stats/process`` bodies, job records (``created_at`` → ``started_at`` →
``finished_at``, the match's ``took_ms``). Outputs are plain dicts for the run's JSON.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from plugin.lab.evaluate.metrics import percentile

#: the ``cpu`` line of ``/proc/stat``, in order (proc(5)); later fields (guest) are inside user
PROC_STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def parse_proc_stat(text: str) -> dict[str, int]:
    """The machine's CPU ticks since boot from ``/proc/stat`` text (its aggregate ``cpu`` line)
    and ``cpus``, the number of ``cpuN`` lines."""
    out: dict[str, int] = {}
    cpus = 0
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "cpu":
            out.update({name: int(v) for name, v in zip(PROC_STAT_FIELDS, parts[1:])})
        elif parts[0].startswith("cpu") and parts[0][3:].isdigit():
            cpus += 1
    if not out:
        raise ValueError("no aggregate 'cpu' line in the /proc/stat text")
    out["cpus"] = cpus
    return out


def machine_cpu(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, float]:
    """The machine's CPU use between two ``parse_proc_stat`` samples: ``busy_cores`` (cores kept
    busy on average: user, nice, system, irq, softirq, steal), its fraction of all cores, and the
    fractions of time idle waiting on I/O and stolen by a hypervisor."""
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in PROC_STAT_FIELDS}
    total = sum(delta.values())
    cpus = after.get("cpus") or 1
    if total <= 0:
        return {"cpus": cpus, "busy_cores": 0.0, "busy_fraction": 0.0, "iowait_fraction": 0.0,
                "steal_fraction": 0.0}
    busy = total - delta["idle"] - delta["iowait"]
    return {"cpus": cpus, "busy_cores": round(busy / total * cpus, 3), "busy_fraction": round(busy / total, 3),
            "iowait_fraction": round(delta["iowait"] / total, 3),
            "steal_fraction": round(delta["steal"] / total, 3)}


def process_stat(line: str) -> tuple[int, int, int]:
    """``(ppid, utime, stime)`` of one ``/proc/<pid>/stat`` line, times in clock ticks (the
    command name, in parentheses, may hold spaces and parentheses: fields count from the last ')')."""
    rest = line[line.rindex(")") + 2:].split()
    return int(rest[1]), int(rest[11]), int(rest[12])


def descendants(parents: Mapping[int, int], roots: Iterable[int]) -> set[int]:
    """``roots`` and every process below them, from a ``{pid: ppid}`` table."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    todo = list(roots)
    while todo:
        pid = todo.pop()
        if pid in found:
            continue
        found.add(pid)
        todo += children.get(pid, [])
    return found


def nodes_cpu_s(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, float]:
    """CPU seconds each OpenSearch node's process spent between two ``_nodes/stats/process``
    bodies (``process.cpu.total_in_millis``), by node name; a node missing from either is left out."""
    def millis(body: Mapping[str, Any]) -> dict[str, tuple[str, int]]:
        return {nid: (n.get("name", nid), n["process"]["cpu"]["total_in_millis"])
                for nid, n in (body.get("nodes") or {}).items()}
    b, a = millis(before), millis(after)
    return {name: round((ms - b[nid][1]) / 1000, 3) for nid, (name, ms) in sorted(a.items()) if nid in b}


def _ts(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def job_timings(job: Mapping[str, Any]) -> dict[str, float] | None:
    """One finished job's seconds: ``queue_s`` (created → started: waiting for a worker),
    ``run_s`` (started → finished: the task), ``end_to_end_s`` (created → finished), and
    ``match_s`` (the matcher's ``took_ms``, inside ``run_s``; the rest of the task is the
    post's bookkeeping: learning, memory, review item, webhooks, the job's own writes).
    ``None`` for a job without the three timestamps."""
    if not all(job.get(k) for k in ("created_at", "started_at", "finished_at")):
        return None
    created, started, finished = (_ts(job[k]) for k in ("created_at", "started_at", "finished_at"))
    out = {"queue_s": started - created, "run_s": finished - started, "end_to_end_s": finished - created}
    took = (((job.get("result") or {}).get("match")) or {}).get("took_ms")
    if took is not None:
        out["match_s"] = took / 1000
        out["bookkeeping_s"] = max(0.0, out["run_s"] - out["match_s"])
    return out


def spread(values: Sequence[float], digits: int = 3) -> dict[str, float] | None:
    """p50, p95 (nearest rank) and mean of a sample; ``None`` when empty."""
    if not values:
        return None
    return {"p50": round(percentile(values, 0.50), digits), "p95": round(percentile(values, 0.95), digits),
            "mean": round(sum(values) / len(values), digits)}


def jobs_summary(jobs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Posts/s between the first job's ``created_at`` and the last one's ``finished_at`` (the
    queue's own clock: independent of how often the client polled), and the spread of each
    timing of ``job_timings`` over the finished jobs."""
    timed = [(j, t) for j in jobs if (t := job_timings(j)) is not None]
    if not timed:
        return {"jobs_timed": 0}
    first = min(_ts(j["created_at"]) for j, _ in timed)
    last = max(_ts(j["finished_at"]) for j, _ in timed)
    window = last - first
    out: dict[str, Any] = {"jobs_timed": len(timed), "window_s": round(window, 2),
                           "posts_per_s": round(len(timed) / window, 2) if window > 0 else None,
                           "redelivered": sum(1 for j, _ in timed if int(j.get("attempts", 1)) > 1)}
    for key in ("end_to_end_s", "queue_s", "run_s", "match_s", "bookkeeping_s"):
        out[key] = spread([t[key] for _, t in timed if key in t])
    return out


def cpu_per_post(cpu_s: Mapping[str, float], machine: Mapping[str, float], wall_s: float,
                 posts: int) -> dict[str, Any]:
    """CPU milliseconds per post by component (``cpu_s``: the measured processes' CPU seconds
    over the window), ``other`` being the machine's busy time no listed component explains
    (other work on the machine shows there), and ``cpu_bound_posts_per_s``: the rate at which
    the components' per-post cost would fill every core of the machine (the ceiling if CPU is
    what limits; the measured rate far below it means something else does)."""
    if posts <= 0 or wall_s <= 0:
        return {}
    busy_s = machine.get("busy_cores", 0.0) * wall_s
    listed = sum(cpu_s.values())
    per = {k: round(v / posts * 1000, 1) for k, v in cpu_s.items()}
    per["other"] = round(max(0.0, busy_s - listed) / posts * 1000, 1)
    own = sum(v for k, v in per.items() if k != "other")
    cpus = machine.get("cpus") or 1
    return {"cpu_ms_per_post": per, "components_ms_per_post": round(own, 1),
            "cpu_bound_posts_per_s": round(cpus * 1000 / own, 2) if own > 0 else None}


def limit_reading(machine: Mapping[str, float], per_post: Mapping[str, Any], posts_per_s: float | None,
                  workers: int, busy_threshold: float = 0.85) -> str:
    """One sentence on what limits the rate, read off the run's numbers: the machine's cores
    (busy at or above ``busy_threshold``, naming the run's largest CPU consumer per post, and
    other work on the machine when it took more), or not CPU (the workers spend their time
    waiting on OpenSearch and Redis round trips: more worker processes should raise the rate)."""
    shares = dict(per_post.get("cpu_ms_per_post") or {})
    other = shares.pop("other", 0.0)
    top = max(shares, key=lambda k: shares[k]) if shares else None
    busy = machine.get("busy_fraction", 0.0)
    if busy >= busy_threshold:
        out = (f"CPU: the machine's {machine.get('cpus')} cores were {busy:.0%} busy; the largest cost per "
               f"post is {top} ({shares.get(top, 0)} ms of the run's {sum(shares.values()):.1f} ms)")
        if top is None or other > shares[top]:
            out += f"; other work on the machine took more ({other} ms per post): measure on a quiet machine"
        return out
    return (f"not CPU ({busy:.0%} busy) with {workers} worker process(es) at {posts_per_s} posts/s: the "
            "workers wait on round trips (OpenSearch, Redis); more worker processes should raise the rate")


def tree_cpu_s(before: Mapping[int, tuple[int, int, int]], after: Mapping[int, tuple[int, int, int]],
               roots: Iterable[int], clk_tck: int) -> float:
    """CPU seconds the processes under ``roots`` spent between two ``{pid: process_stat(...)}``
    tables: each process's ticks in ``after`` less those in ``before`` (all of them for one
    started since). A process that ended in between is lost with its ticks: sample before stopping."""
    parents = {pid: stat[0] for pid, stat in after.items()}
    ticks = 0
    for pid in descendants(parents, roots):
        if pid not in after:
            continue
        _, utime, stime = after[pid]
        was = before.get(pid)
        ticks += utime + stime - ((was[1] + was[2]) if was else 0)
    return round(ticks / clk_tck, 3)
