"""Commands for the evidence store: ``ingest-evidence`` (JSON Lines documents or AVeriTeC
knowledge-store files, streamed) and ``evidence-search`` (hybrid search under the claim-date and
exclusion constraints)."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from plugin.service.services import Services

from cli.common import add_tenant_flag, dump, parse_date, writer_of


@contextmanager
def _progress_bar(quiet: bool, unit: str) -> Iterator[Callable[[int], Any] | None]:
    """A tqdm bar's ``update`` on an interactive stderr (closed on the way out), else ``None``."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    from tqdm import tqdm

    with tqdm(unit=unit, desc="ingest-evidence", file=sys.stderr) as bar:
        yield bar.update


def cmd_ingest_evidence(args: argparse.Namespace, services: Services) -> int:
    from plugin.evidence import ensure_evidence_index, ingest_evidence, read_evidence

    settings = services.settings
    ensure_evidence_index(services.store, settings, services.embedder)
    with _progress_bar(args.quiet, "passage") as progress:
        report = ingest_evidence(read_evidence(args.paths, claim_id=args.claim_id),
                                 store=services.store, embedder=services.embedder,
                                 index=settings.evidence_index,
                                 batch_size=args.batch_size or settings.embedding_batch_size,
                                 progress=progress, writer=writer_of(args))
    dump(report.to_dict())
    return 1 if args.strict and report.rejected else 0


def cmd_evidence_search(args: argparse.Namespace, services: Services) -> int:
    from plugin.evidence import EvidenceQuery, EvidenceRetriever

    retriever = EvidenceRetriever(services.store, services.embedder, services.settings,
                                  config=args.config, max_per_url=args.max_per_url)
    result = retriever.search(EvidenceQuery(
        text=args.text, before=parse_date(args.before, "--before"),
        exclude_urls=tuple(args.exclude_url or ()), exclude_domains=tuple(args.exclude_domain or ()),
        k=args.k, lang=args.lang, strict_dates=args.strict_dates, claim_id=args.claim_id))
    if args.json:
        dump(result.to_dict())
        return 0
    print(f"  language: {result.lang or '?'}   ({result.took_ms:.0f} ms)")
    if not result.passages:
        print("  no evidence")
    for p in result.passages:
        print(f"  {p['rank']:>2}. [{p['score']:.4f}] {p['title'] or p['url']}  "
              f"({p['published_at'] or 'undated'}, {p['url']})")
        print(f"      {' '.join(p['text'].split()[:60])}")
    return 0


def register(sub: Any, add: Any) -> None:
    sp = add("ingest-evidence", cmd_ingest_evidence,
             "load evidence documents (JSON Lines, AVeriTeC knowledge store) as passages")
    sp.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    sp.add_argument("--claim-id", default=None,
                    help="the claim whose knowledge store these files are (lines naming none)")
    sp.add_argument("--batch-size", type=int, default=None, help="passages per embedding batch")
    sp.add_argument("--strict", action="store_true", help="exit 1 when anything was rejected")
    sp.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    add_tenant_flag(sp)

    sp = add("evidence-search", cmd_evidence_search,
             "find evidence passages for a claim or question (hybrid BM25 + kNN)")
    sp.add_argument("text")
    sp.add_argument("--before", default=None, metavar="YYYY-MM-DD",
                    help="the claim date: only evidence published strictly before it")
    sp.add_argument("--strict-dates", action="store_true",
                    help="with --before, drop undated passages too (kept by default)")
    sp.add_argument("--exclude-url", action="append", metavar="URL",
                    help="never return this page (e.g. the claim's fact-check); repeatable")
    sp.add_argument("--exclude-domain", action="append", metavar="DOMAIN",
                    help="never return pages of this domain or its subdomains; repeatable")
    sp.add_argument("--claim-id", default=None, help="search only this claim's knowledge store")
    sp.add_argument("--lang", default=None, help="the text's language (detected when omitted)")
    sp.add_argument("--config", default=None,
                    help="a retrieval configuration name (default: the evidence hybrid)")
    sp.add_argument("--max-per-url", type=int, default=2, help="passages of one page at most")
    sp.add_argument("-k", type=int, default=5)
    sp.add_argument("--json", action="store_true")
