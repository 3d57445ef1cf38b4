"""Decisions per second through ``POST /v1/review/decisions`` in bulk; prints JSON.

Makes ``--items`` pending review items (five candidates each, as a worker would record them) in
a private namespace of the configured OpenSearch and Redis, then confirms them through the API
(Flask's test client: the route, the checks, the conditional item writes and the log appends,
without an HTTP server in front) in lists of ``--batch``, exports them as training pairs (the
streamed ``decisions export``), and deletes the namespace again.

    PYTHONPATH=. python scripts/review_throughput.py [--items 2000] [--batch 200]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from plugin.index.store import Store  # noqa: E402
from plugin.service.keys import Scope  # noqa: E402
from plugin.kv import KV  # noqa: E402
from plugin.service.services import Services  # noqa: E402
from plugin.settings import Settings  # noqa: E402
from plugin.search.result import Match  # noqa: E402


def match_result(i: int) -> dict:
    """A match of five candidates, shaped as ``Matcher.match(...).to_dict()``."""
    return {"lang": "en", "config": "hybrid-rrf", "reranked": False, "matches": [
        {"id": f"fc-{i}-{r}", "claim": f"claim {i}/{r}", "rating": "False", "publisher": "Bench",
         "published_at": "2024-01-01", "url": f"https://checks.example.org/{i}/{r}", "lang": "en",
         "rank": r, "score": 1 / (60 + r), "confidence": 0.9 - r / 10,
         "explain": {"bm25:post": {"rank": r, "score": 10 - r}, "dense:post": {"rank": r, "score": 0.9}}}
        for r in range(1, 6)]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--items", type=int, default=2000)
    p.add_argument("--batch", type=int, default=200)
    args = p.parse_args()
    tag = uuid.uuid4().hex[:8]
    settings = Settings().model_copy(update={
        "redis_prefix": f"bench-review-{tag}", "review_index": f"bench-review-{tag}",
        "decisions_index": f"bench-decisions-{tag}", "rate_limit_requests": 100000})
    store = Store(settings)
    services = Services(settings, store=store)
    from api import create_app

    client = create_app(settings, services=services).test_client()
    tenant = f"bench-{tag}"
    _, key = services.keys.create("bench", Scope.WRITE, tenant)
    auth = {"Authorization": f"Bearer {key}"}
    try:
        desk = services.review
        t0 = time.perf_counter()
        for i in range(args.items):
            desk.record_item(tenant, f"post-{i}", f"post text {i}", "en", "2024-02-01", None,
                             Match.from_dict(match_result(i), {"retrieval_config": "hybrid-rrf"}))
        record_s = time.perf_counter() - t0
        per_request = []
        t0 = time.perf_counter()
        for start in range(0, args.items, args.batch):
            body = [{"post_id": f"post-{i}", "action": "confirm"}
                    for i in range(start, min(start + args.batch, args.items))]
            t1 = time.perf_counter()
            resp = client.post("/v1/review/decisions", json=body, headers=auth)
            per_request.append(time.perf_counter() - t1)
            if resp.status_code != 201:
                raise SystemExit(f"decisions failed: {resp.status_code} {resp.data[:300]!r}")
        decide_s = time.perf_counter() - t0
        logged = store.count(settings.decisions_index)
        t0 = time.perf_counter()
        pairs = sum(1 for _ in desk.export(tenant))
        export_s = time.perf_counter() - t0
        print(json.dumps({
            "items": args.items, "batch": args.batch, "requests": len(per_request),
            "decisions_logged": logged, "decide_s": round(decide_s, 3),
            "decisions_per_s": round(args.items / decide_s, 1),
            "request_ms_median": round(statistics.median(per_request) * 1e3, 1),
            "request_ms_max": round(max(per_request) * 1e3, 1),
            "record_items_per_s": round(args.items / record_s, 1),
            "export_pairs": pairs, "export_s": round(export_s, 3),
            "export_decisions_per_s": round(logged / export_s, 1),
            "opensearch": store.url}))  # redacted: never credentials
    finally:
        for alias in (settings.review_index, settings.decisions_index):
            store.delete_index(f"{alias}-v*")
            store.delete_index_template(f"factsieve-{alias}")
        KV(settings).delete_namespace()


if __name__ == "__main__":
    main()
