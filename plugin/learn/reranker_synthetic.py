"""Synthetic decided posts over a labelled dataset, for the reranker update's tests and its
timing (``scripts/reranker_bench.py``), not for serving.

Post ``i`` is query ``i mod n`` of the dataset (its text, its language); the desk was shown its
relevant fact-check at a random rank among ``shown`` candidates, the others drawn from the corpus,
and the reviewer confirms it (or, for ``none_share`` of the posts, answers "none of these").
Deterministic for a seed.
"""
from __future__ import annotations

import random
from typing import Any

from plugin.search.result import Match


def synthetic_posts(queries: list[dict[str, Any]], qrels: dict[str, set[str]], factcheck_ids: list[str],
                    n: int, *, seed: int = 0, shown: int = 5, none_share: float = 0.1) -> list[dict[str, Any]]:
    """``n`` posts as ``{post_id, text, lang, candidates: [ids], action, factcheck_id}``."""
    rng = random.Random(seed)
    labelled = [q for q in queries if qrels.get(str(q["id"]))]
    out = []
    for i in range(n):
        q = labelled[i % len(labelled)]
        right = sorted(qrels[str(q["id"])])[0]
        others = rng.sample([f for f in factcheck_ids if f not in qrels[str(q["id"])]], shown - 1)
        others.insert(rng.randrange(shown), right)
        confirm = rng.random() >= none_share
        out.append({"post_id": f"syn-{seed}-{i}", "text": q["text"], "lang": q.get("lang") or "en",
                    "candidates": others, "action": "confirm" if confirm else "none",
                    "factcheck_id": right if confirm else None})
    return out


def record_posts(desk: Any, tenant: str, posts: list[dict[str, Any]], actor: str = "ana") -> None:
    """The posts' review items, then their decisions, through ``desk`` (a ``ReviewDesk``)."""
    for p in posts:
        matches = [{"id": f, "rank": k + 1, "score": round(0.05 / (k + 1), 4), "confidence": None}
                   for k, f in enumerate(p["candidates"])]
        desk.record_item(tenant, p["post_id"], p["text"], p["lang"], None, None,
                         Match.from_dict({"matches": matches, "config": "synthetic", "reranked": False},
                                         {"retrieval_config": "synthetic"}))
    wanted = [{"post_id": p["post_id"], "action": p["action"],
               **({"factcheck_id": p["factcheck_id"]} if p["factcheck_id"] else {})} for p in posts]
    for start in range(0, len(wanted), 200):
        desk.decide(tenant, actor, wanted[start:start + 200], origin="desk")
