#!/usr/bin/env python
"""What an image post costs through the real HTTP API and the workers; prints one JSON object.
Not a test.

  .venv/bin/python scripts/image_post_bench.py [--dataset samples/clef2020] [--posts 50]
      [--worker-posts 50] [--template light] [--worker-lang unknown]

A throwaway deployment (``scripts/api_checks.py``'s: own Redis prefix, fact-check and jobs
aliases, an API key, gunicorn with 2 workers on a loopback port) whose fact-check index holds the
bundled samples plus the fact-checks of ``--dataset`` (a folder with ``factchecks.jsonl``,
``queries.jsonl`` and ``qrels.jsonl``). The dataset's queries are drawn as image posts
(``plugin.lab.images.render``, ``--template``), the image alone, no caption.

``match``: ``--posts`` posts sent one after another to ``POST /v1/match`` (the image in base64
JSON), once with the post's language given (``known``) and once without (``unknown``: the OCR
routes by script), after a warm-up of 4 posts each (every gunicorn worker loads its OCR models).
Per post: the client's seconds end to end, the image stage's milliseconds (``image.timings_ms``:
decode, hash, OCR) and the matcher's (``took_ms``); the rest is HTTP, JSON, base64 and auth.
``found@10``: posts whose relevant fact-check is among the 10 answered.

``workers``: two ``factsieve worker`` processes (one task each: concurrency 2), ``--worker-posts``
posts submitted at once to ``POST /v1/posts`` (base64 JSON), timed from the first submit until
every job finished: posts per second, and per job its latency (created → finished), queue wait
(created → started) and run (started → finished), from the jobs' own timestamps.
Everything it made is deleted.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import sys
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from api_checks import Deployment, _wait, start_workers, stop  # noqa: E402

from plugin.errors import BadInput  # noqa: E402
from plugin.lab.evaluate.metrics import percentile  # noqa: E402

BUNDLED = {(ROOT / "samples" / name).resolve() for name in ("clef2020", "multiclaim")}
WARM_UP = 4  # posts per run before measuring: two per gunicorn worker


def image_posts(dataset: Any, n: int, template: str) -> list[dict[str, Any]]:
    """``n`` posts (the dataset's queries in order, again from the start when it has fewer):
    ``id``, ``lang``, ``relevant`` (the qrels' fact-check ids) and ``image`` (base64)."""
    from plugin.lab.images.render import render

    drawn = []
    for q in dataset.queries:
        try:
            shot = render(q["text"], template, seed=str(q["id"]))
        except BadInput:  # a script the renderer cannot draw
            continue
        drawn.append({"id": str(q["id"]), "lang": q.get("lang"), "bytes": len(shot.data),
                      "relevant": set(dataset.qrels["all"].get(str(q["id"]), ())),
                      "image": base64.b64encode(shot.data).decode("ascii")})
    if not drawn:
        raise SystemExit("no query of the dataset could be drawn")
    return [drawn[i % len(drawn)] for i in range(n)]


def stats(values: list[float], digits: int = 1) -> dict[str, float] | None:
    if not values:
        return None
    return {"p50": round(percentile(values, 0.5), digits), "p95": round(percentile(values, 0.95), digits),
            "mean": round(statistics.fmean(values), digits)}


def body(post: dict[str, Any], lang_known: bool, **extra: Any) -> dict[str, Any]:
    return {"image": post["image"], **({"lang": post["lang"]} if lang_known and post["lang"] else {}), **extra}


def run_match(dep: Deployment, posts: list[dict[str, Any]], lang_known: bool) -> dict[str, Any]:
    """The posts one after another through ``POST /v1/match``, after ``WARM_UP`` unmeasured."""
    session = requests.Session()
    session.headers.update(dep.headers)

    def send(post: dict[str, Any]) -> dict[str, Any]:
        resp = session.post(f"{dep.base}/v1/match", json=body(post, lang_known, k=10), timeout=120)
        if resp.status_code != 200:
            raise SystemExit(f"POST /v1/match answered {resp.status_code}: {resp.text[:300]}")
        return resp.json()

    for post in posts[:WARM_UP]:
        send(post)
    wall, stage, matcher, found, empty = [], [], [], 0, 0
    parts: dict[str, list[float]] = {}
    for post in posts:
        t0 = time.perf_counter()
        out = send(post)
        wall.append(time.perf_counter() - t0)
        timings = (out.get("image") or {}).get("timings_ms") or {}
        for k, v in timings.items():
            parts.setdefault(k, []).append(v)
        stage.append(sum(timings.values()))
        matcher.append(out["took_ms"])
        found += bool(post["relevant"] & {m["id"] for m in out["matches"]})
        empty += not ((out.get("image") or {}).get("ocr") or {}).get("text", "").strip()
    total_ms = sum(wall) * 1e3
    return {"lang": "known" if lang_known else "unknown", "posts": len(posts),
            "seconds_per_post": stats(wall, 3),
            "image_stage_ms": stats(stage), "stage_parts_ms": {k: stats(v) for k, v in sorted(parts.items())},
            "matcher_ms": stats(matcher),
            # where the time goes, summed over the posts: the image stage, the matcher, the rest
            "share": {"image_stage": round(sum(stage) / total_ms, 3), "matcher": round(sum(matcher) / total_ms, 3),
                      "other": round(1 - (sum(stage) + sum(matcher)) / total_ms, 3)},
            "no_text_read": empty, "found@10": round(found / len(posts), 3)}


def run_workers(dep: Deployment, posts: list[dict[str, Any]], lang_known: bool, timeout_s: float) -> dict[str, Any]:
    """Two worker processes; the posts submitted at once to ``POST /v1/posts``, timed until every
    job finished."""
    session = requests.Session()
    session.headers.update(dep.headers)

    def submit(post: dict[str, Any], prefix: str) -> str:
        resp = session.post(f"{dep.base}/v1/posts", timeout=60,
                            json=body(post, lang_known, id=f"{prefix}-{uuid.uuid4().hex}"))
        if resp.status_code != 202:
            raise SystemExit(f"POST /v1/posts answered {resp.status_code}: {resp.text[:300]}")
        return resp.json()["job_id"]

    procs = start_workers(dep, 2)
    try:
        warm = [submit(post, "warm") for post in posts[:WARM_UP]]  # each worker loads its models
        _wait(dep, warm, timeout_s)
        t0 = time.perf_counter()
        jobs = [submit(post, "img") for post in posts]
        submit_s = time.perf_counter() - t0
        statuses = _wait(dep, jobs, timeout_s)
        wall = time.perf_counter() - t0
    finally:
        stop(procs)
    records = [session.get(f"{dep.base}/v1/jobs/{j}", timeout=30).json() for j in jobs]
    done = [r for r in records if r.get("finished_at")]

    def at(job: dict[str, Any], field: str) -> float:
        return datetime.fromisoformat(job[field]).timestamp()

    latency = [at(r, "finished_at") - at(r, "created_at") for r in done]
    waits = [at(r, "started_at") - at(r, "created_at") for r in done if r.get("started_at")]
    runs = [at(r, "finished_at") - at(r, "started_at") for r in done if r.get("started_at")]
    stage = [sum((((r.get("result") or {}).get("match") or {}).get("image") or {}).get("timings_ms", {}).values())
             for r in done if r["status"] == "succeeded"]
    span = (max(at(r, "finished_at") for r in done) - min(at(r, "created_at") for r in records)) if done else None
    return {"lang": "known" if lang_known else "unknown", "celery_workers": 2, "posts": len(posts),
            "statuses": statuses, "submit_s": round(submit_s, 2), "wall_s": round(wall, 2),
            # first job created → last job finished, by the jobs' own clocks (no polling delay)
            "span_s": round(span, 2) if span else None,
            "posts_per_s": round(len(done) / span, 3) if span else None,
            "job_latency_s": stats(latency, 3), "queue_wait_s": stats(waits, 3), "run_s": stats(runs, 3),
            "image_stage_ms": stats(stage)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", type=Path, default=ROOT / "samples" / "clef2020",
                    help="folder with factchecks.jsonl, queries.jsonl and qrels.jsonl (default: the bundled CLEF slice)")
    ap.add_argument("--posts", type=int, default=50, help="image posts per POST /v1/match run")
    ap.add_argument("--worker-posts", type=int, default=50, help="image posts through POST /v1/posts (0: none)")
    ap.add_argument("--template", default="light", help="light, dark or meme")
    ap.add_argument("--worker-lang", choices=("known", "unknown"), default="unknown",
                    help="whether the worker run's posts give their language")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds to wait for the jobs")
    ap.add_argument("--json", action="store_true", help="one line of JSON (default: indented)")
    args = ap.parse_args()
    from plugin.ingest import Format, ingest, read_records
    from plugin.learn.train.datasets import load_dataset

    dataset = load_dataset(args.dataset)
    posts = image_posts(dataset, max(args.posts, args.worker_posts, WARM_UP), args.template)
    dep = Deployment(2, rate_limit_requests=10_000_000, tenant_max_active_jobs=max(200, 2 * args.worker_posts))
    try:
        if args.dataset.resolve() not in BUNDLED:
            ingest(read_records([args.dataset / "factchecks.jsonl"], Format.jsonl), store=dep.services.store,
                   embedder=dep.services.embedder, index=dep.settings.index)
        out = {"dataset": str(args.dataset), "template": args.template,
               "factchecks": dep.services.store.count(dep.settings.index),
               "image_bytes": stats([float(p["bytes"]) for p in posts[:args.posts]], 0),
               "server": "gunicorn, 2 workers, loopback", "cpus": os.cpu_count(),
               "match": [run_match(dep, posts[:args.posts], known) for known in (True, False)]}
        if args.worker_posts:
            out["workers"] = run_workers(dep, posts[:args.worker_posts], args.worker_lang == "known", args.timeout)
        out["loadavg_1m"] = round(os.getloadavg()[0], 2)  # other work on the machine shows here
    finally:
        dep.close()
    print(json.dumps(out, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
