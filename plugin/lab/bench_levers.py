"""``factsieve bench --levers``: what each query-time lever buys on a corpus, measured one at a time.

The bench's latency rows say what a match costs; these say why, and what a change would save,
on the same index without rebuilding it:

- **BM25 bodies** (``bm25_levers``): the body the live path sends (``as-served``: stop words
  left out of the language-neutral fields' selecting clause and added back by a rescore, every
  hit counted; ``queries.bm25_query``) beside one lever each: ``skip-blocks``
  (``track_total_hits: false``: Lucene skips non-competitive blocks instead of scoring window by
  window), ``unsplit`` (one ``most_fields`` match, the neutral fields' stop words searched over
  the whole corpus), ``unsplit-skip-blocks`` (both: the body served before), ``prefix-N`` (only
  the first N words of the post: BM25 over a bounded prefix), ``i18n-only`` (the
  language-analysed fields alone). Timed as OpenSearch's ``took`` and as the client sees it.
  ``prefix-N`` and ``i18n-only`` change what is found: their quality is ``factsieve
  evaluate``'s to judge (docs/reports/2026-11-27-bench-1m.md has both).
- **kNN** (``knn_levers``): recall@10 against exact search and the time of the approximate
  search for several ``ef_search`` values (the graph's candidate list, per query).

Bodies are small pure functions; the store runs them.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from plugin.index.store import Store
from plugin.lab.bench_index import knn_recall
from plugin.search.queries import bm25_query, bm25_search, bm25_text, text_fields

#: how many candidates the live path asks BM25 for (``Matcher``'s candidate depth)
CANDIDATES = 50
#: prefixes (in terms) measured for "BM25 over a bounded prefix"
PREFIXES = (32, 16)
#: ``ef_search`` values measured for the approximate kNN
EF_SEARCH = (50, 100, 200, 400)


def prefix_words(text: str, n: int) -> str:
    """The first ``n`` whitespace-separated words of ``text`` (pure)."""
    return " ".join(text.split()[:n])


def bm25_variants(text: str, lang: str | None, *, size: int = CANDIDATES) -> dict[str, dict[str, Any]]:
    """The live BM25 body for ``text`` and one body per lever, by name (pure)."""
    served = bm25_query(text, lang=lang, filters=None, size=size)
    whole = bm25_query(text, lang=lang, filters=None, size=size, split=False)
    out = {"as-served": served, "skip-blocks": {**served, "track_total_hits": False},
           "unsplit": whole, "unsplit-skip-blocks": {**whole, "track_total_hits": False}}
    for n in PREFIXES:
        out[f"prefix-{n}"] = bm25_query(prefix_words(bm25_text(text), n), lang=lang, filters=None, size=size)
    i18n = [f for f in text_fields(lang) if "_i18n." in f]
    if i18n:
        out["i18n-only"] = {**whole, **bm25_search(text, i18n, lang, None, size, split=False)}
    return out


def _p(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2) if ordered else 0.0


def timed(run: Callable[[], dict[str, Any]]) -> tuple[float, float]:
    """``(took_ms, wall_ms)`` of one search: OpenSearch's own figure and the client's."""
    t0 = time.perf_counter()
    response = run()
    return float(response.get("took", 0)), (time.perf_counter() - t0) * 1e3


def bm25_levers(store: Store, index: str, texts: Sequence[str], lang: str | None, *,
                rounds: int = 2) -> dict[str, Any]:
    """p50/p95 of each BM25 variant over ``texts`` (normalised posts); ``rounds`` passes, the
    variants interleaved per post so that caches warm for all of them alike; the last pass counts."""
    names = list(bm25_variants(texts[0], lang)) if texts else []
    took: dict[str, list[float]] = {}
    wall: dict[str, list[float]] = {}
    for r in range(rounds):
        took, wall = {n: [] for n in names}, {n: [] for n in names}
        for text in texts:
            for name, body in bm25_variants(text, lang).items():
                t, w = timed(lambda b=body: store.search(index, b))
                took.setdefault(name, []).append(t)
                wall.setdefault(name, []).append(w)
    return {name: {"took_p50": _p(took[name], 0.5), "took_p95": _p(took[name], 0.95),
                   "wall_p50": round(statistics.median(wall[name]), 2), "queries": len(took[name])}
            for name in took if took[name]}


def knn_levers(store: Store, index: str, vectors: Sequence[Sequence[float]],
               ef_values: Sequence[int] = EF_SEARCH) -> dict[str, Any]:
    """Recall@10 against exact search and the approximate search's p50 per ``ef_search``."""
    return {f"ef_search={ef}": knn_recall(store, index, vectors, ef_search=ef) for ef in ef_values}
