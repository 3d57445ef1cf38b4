"""``factsieve bench-claims``: what a post's join to its claim costs as the posts index grows.

For each size it builds a throwaway posts alias (``bench-claims-<n>``, the posts template, one
tenant) of synthetic posts: unit vectors of the embedding's dimension drawn around claim centres
(5 posts a claim, each with a best-match id shared by its claim), and measures the join's reads and
decision as the post job makes them (``ClaimStore.earlier``: the post's nearest posts and its
nearest with the same best match, in one ``msearch``, merges followed; then ``cluster.choose``)
for ``queries`` new posts near random claims. The latency is the whole join, p50 and p95, one
query at a time; the index's size on disk beside it. The aliases are dropped afterwards unless
``keep``.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from plugin.claims.cluster import PostSignals, choose, served_rule
from plugin.claims.store import ClaimStore
from plugin.errors import FactSieveError
from plugin.index.templates import install_plain_index
from plugin.lab.bench_index import drop_index, index_stats
from plugin.lab.evaluate.metrics import percentile
from plugin.models import post_doc_id

TENANT = "bench"
#: posts a synthetic claim has
PER_CLAIM = 5
#: each coordinate's noise around its claim's centre: two posts of a claim at cosine ≈ 0.96, as
#: re-posts are, so the join links them (``joined_its_claim`` checks it did)
NOISE = 0.01


def _vectors(rng: np.random.Generator, centres: np.ndarray, which: np.ndarray, noise: float) -> np.ndarray:
    v = centres[which] + noise * rng.normal(size=(len(which), centres.shape[1])).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def build(store: Any, alias: str, n: int, dim: int, rng: np.random.Generator, batch: int = 2000) -> np.ndarray:
    """The synthetic posts alias of ``n`` posts; the claim centres."""
    drop_index(store, alias)
    install_plain_index(store, "posts", alias, 0, {"model": "bench", "dimension": dim})
    claims = max(n // PER_CLAIM, 1)
    centres = rng.normal(size=(claims, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    for start in range(0, n, batch):
        ids = np.arange(start, min(start + batch, n))
        which = ids % claims
        vecs = _vectors(rng, centres, which, NOISE)
        actions = ({"_op_type": "index", "_index": alias, "_id": post_doc_id(TENANT, f"p{i}"),
                    "_source": {"tenant": TENANT, "post_id": f"p{i}", "text": f"post {i}", "lang": "en",
                                "created_at": "2026-11-28T00:00:00.000+00:00", "claim_id": f"c{w}",
                                "answer": f"f{w}", "answer_confidence": 0.9,
                                "embedding": [round(float(x), 6) for x in v]}}
                   for i, w, v in zip(ids, which, vecs))
        for ok, info in store.bulk(actions, chunk_size=500):
            if not ok:
                raise RuntimeError(f"bench-claims: a synthetic post was refused: {info}")
    store.refresh(alias)
    return centres


def bench_join(store: Any, settings: Any, sizes: Sequence[int], *, queries: int = 200, dim: int = 384,
               seed: int = 0, keep: bool = False) -> dict[str, Any]:
    """``{"sizes": {n: {...}}}``: the join's latency at each posts-index size (see the module)."""
    rng = np.random.default_rng(seed)
    rule = served_rule()
    out: dict[str, Any] = {"rule": vars(rule), "queries": queries, "dim": dim, "sizes": {}}
    for n in sizes:
        alias = f"bench-claims-{n}"
        t0 = time.perf_counter()
        centres = build(store, alias, n, dim, rng)
        built_s = time.perf_counter() - t0
        cs = ClaimStore(store, settings.model_copy(update={"posts_index": alias, "claims_index": f"{alias}-claims"}))
        cs.ensure()
        which = rng.integers(0, len(centres), size=queries)
        vecs = _vectors(rng, centres, which, NOISE)
        times, joined = [], 0
        for w, v in zip(which, vecs):
            t = time.perf_counter()
            earlier = cs.earlier(TENANT, v.tolist(), rule.neighbours, f"f{w}")
            got = choose(rule, PostSignals("new", frozenset(), f"f{w}", 0.9), earlier)
            times.append((time.perf_counter() - t) * 1e3)
            joined += got.claim_id == f"c{w}"
        out["sizes"][str(n)] = {"posts": n, "build_s": round(built_s, 1),
                                "join_ms": {"p50": round(percentile(times, 0.5), 2),
                                            "p95": round(percentile(times, 0.95), 2)},
                                "joined_its_claim": round(joined / max(queries, 1), 4),
                                "index": index_stats(store, alias)}
        if not keep:  # the measurement is kept whatever the drop does (a 1M index's delete may time out)
            try:
                drop_index(store, alias)
                drop_index(store, f"{alias}-claims")
            except FactSieveError as exc:
                out["sizes"][str(n)]["dropped"] = f"not dropped: {exc.detail[:300]}"
    return out
