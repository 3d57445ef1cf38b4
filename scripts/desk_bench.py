#!/usr/bin/env python
"""How fast the desk's queue page renders in a real browser. Not a test: it prints one JSON object.

  .venv/bin/python scripts/desk_bench.py [--dataset samples/clef2020] [--items 50] [--runs 40]

A throwaway deployment (``scripts/api_checks.py``'s: own Redis prefix and aliases, gunicorn with
2 workers), plus the fact-checks of ``--dataset`` (a folder with ``factchecks.jsonl`` and
``queries.jsonl``, e.g. /work/shared/data/clef2020_task2 for the 10k CLEF-2020 corpus) and its own
review and decision indexes. The first ``--items`` queries of the dataset are matched and become
review items (as the post job makes them); chromium (Debian's, through playwright) signs in and
loads ``/desk/`` ``--runs`` times after 3 warm-ups. Per load, from the Navigation Timing entry:
``server_ms`` (request sent to first byte), ``transfer_ms`` (first to last byte), ``parse_ms``
(last byte to the DOM parsed), ``dom_ms`` (DOMContentLoaded) and ``render_ms``
(the load event: HTML parsed, CSS and scripts run, the page drawn). Everything it made is deleted.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from api_checks import Deployment, percentile  # noqa: E402

from plugin.owners import DEFAULT_TENANT  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
TIMING = """() => { const n = performance.getEntriesByType("navigation")[0];
  return {server_ms: n.responseStart - n.requestStart, transfer_ms: n.responseEnd - n.responseStart,
          parse_ms: n.domInteractive - n.responseEnd, dom_ms: n.domContentLoadedEventEnd - n.startTime,
          render_ms: n.loadEventEnd - n.startTime, bytes: n.transferSize,
          items: document.querySelectorAll("article.item").length,
          candidates: document.querySelectorAll("li.candidate").length}; }"""


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def fill_queue(dep: Deployment, dataset: Path, n: int) -> dict:
    """Index the dataset's fact-checks, then match its first ``n`` queries into review items."""
    from plugin.ingest import Format, ingest, read_records
    from plugin.search.request import MatchRequest
    from plugin.service.matching import match_post

    svc = dep.services
    started = time.perf_counter()
    wanted = sum(1 for line in (dataset / "factchecks.jsonl").open(encoding="utf-8") if line.strip())
    ingested = 0
    if svc.store.count(dep.settings.index) < wanted:  # a kept index (--index) is ingested once
        report = ingest(read_records([dataset / "factchecks.jsonl"], Format.jsonl), store=svc.store,
                        embedder=svc.embedder, index=dep.settings.index)
        ingested = report.indexed + report.updated
    ingest_s = time.perf_counter() - started
    queries = read_jsonl(dataset / "queries.jsonl")[:n]
    for i, query in enumerate(queries):
        found = match_post(svc.matching, MatchRequest.from_mapping({"text": query["text"]}), DEFAULT_TENANT)
        svc.review.record_item(DEFAULT_TENANT, f"bench-{i}-{query.get('id', i)}", query["text"],
                               found.lang, query.get("date"), None, found)
    return {"factchecks": svc.store.count(dep.settings.index), "ingested": ingested,
            "ingest_s": round(ingest_s, 1), "posts": len(queries)}


def measure(base: str, key: str, runs: int, save_html: Path | None = None) -> list[dict]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_context(base_url=base).new_page()
        page.goto("/desk/signin")
        page.get_by_label("Your API key").fill(key)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url("**/desk/")
        out = []
        for i in range(runs + 3):
            page.goto("/desk/", wait_until="load")
            if i >= 3:
                out.append(page.evaluate(TIMING))
        if save_html:
            save_html.write_text(page.content(), encoding="utf-8")
        browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", type=Path, default=ROOT / "samples" / "clef2020",
                    help="folder with factchecks.jsonl and queries.jsonl (default: the bundled CLEF slice)")
    ap.add_argument("--items", type=int, default=50, help="review items in the queue (one page: at most 50)")
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--index", help="a fact-check index alias to keep between runs (ingested only when it "
                    "holds fewer records than the dataset); default: a throwaway one")
    ap.add_argument("--save-html", type=Path, help="write the last page's HTML here")
    args = ap.parse_args()
    kept = {"index": args.index} if args.index else {}
    dep = Deployment(2, **kept)  # its post aliases are its own (api_checks.Deployment)
    try:
        corpus = fill_queue(dep, args.dataset, args.items)
        loads = measure(dep.base, dep.key, args.runs, args.save_html)
    finally:
        dep.close(keep_index=bool(args.index))  # its post aliases too

    def stats(field: str) -> dict:
        values = [load[field] for load in loads]
        return {"p50": round(percentile(values, 50), 1), "p95": round(percentile(values, 95), 1),
                "max": round(max(values), 1)}

    print(json.dumps({"dataset": str(args.dataset), **corpus, "runs": len(loads),
                      "items_on_page": loads[-1]["items"], "candidates_on_page": loads[-1]["candidates"],
                      "page_bytes": loads[-1]["bytes"], "render_ms": stats("render_ms"),
                      "dom_ms": stats("dom_ms"), "server_ms": stats("server_ms"),
                      "transfer_ms": stats("transfer_ms"), "parse_ms": stats("parse_ms"),
                      "browser": CHROMIUM, "server": "gunicorn, 2 workers, loopback"}, indent=2))


if __name__ == "__main__":
    main()
