"""The memory on a stream with re-posts: how many re-posts it answers, how precisely; prints JSON.

From a retrieval dataset (``factchecks.jsonl``, ``queries.jsonl``, ``qrels.jsonl``: the bundled
``samples/clef2020`` by default) it plays a tenant's stream through the real post path
(``Matcher.match`` → ``Services.learning`` → ``Services.posts.remember`` → the review item), in
a private namespace of the configured OpenSearch and Redis, deleted afterwards:

1. originals (about 70 % of the queries, chosen by a hash of their id) are matched and decided
   by an oracle reviewer through ``ReviewDesk.decide``: ``confirm`` of the qrels' fact-check when
   it is among the top 5 shown, ``none`` when it is not;
2. each original is re-posted ``--reposts`` times with small edits (``plugin.learn.memory_reposts``);
   the other 30 % of the queries, never decided, come as ``fresh`` posts (what memory should
   leave alone unless they make the same claim as a decided post).

For every re-post and fresh post the script reads its neighbours once and applies the memory at
each threshold of ``--thresholds``, with and without the same-claim test; per threshold it reports the share answered by memory (the
top match ``confirmed-by-desk``), its precision (that fact-check is a qrels one of the post), the
share where a pair the desk rejected came back (should be 0), and S@1 before/after memory.

    PYTHONPATH=. python scripts/memory_stream.py [--dataset samples/clef2020] [--reposts 2]
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import random
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from plugin.index.store import Store  # noqa: E402
from plugin.learn.train.datasets import ensure_dataset_index, load_dataset  # noqa: E402
from plugin.learn.memory import CONFIRMED_BY_DESK, Memory, pairs_of  # noqa: E402
from plugin.learn.memory_reposts import repost  # noqa: E402
from plugin.search.duplicates import DUPLICATE_JACCARD  # noqa: E402
from plugin.search.request import MatchRequest  # noqa: E402
from plugin.service.matching import match_post  # noqa: E402
from plugin.kv import KV  # noqa: E402
from plugin.service.services import Services  # noqa: E402
from plugin.settings import POST_INDEXES, TEST_MODEL, Settings  # noqa: E402

THRESHOLDS = (0.85, 0.9, 0.93, 0.95, 0.97, 0.99)
#: how a neighbour counts as a re-post: cosine at the threshold or the same-claim test (what
#: serving does), or cosine alone
VARIANTS = {"cosine_or_same_claim": DUPLICATE_JACCARD, "cosine": None}


class Once:
    """A ``PostMemory`` whose neighbour and decision reads are made once per post, so every
    threshold sees the same reads."""

    def __init__(self, posts: Any) -> None:
        self.posts, self._n, self._d = posts, {}, {}

    def vector(self, text: str) -> list[float]:
        return self.posts.vector(text)

    def neighbours(self, tenant: str, vector: Any, k: int) -> Any:
        key = (tenant, tuple(vector), k)
        if key not in self._n:
            self._n[key] = self.posts.neighbours(tenant, vector, k)
        return self._n[key]

    def decisions(self, tenant: str, post_ids: Any) -> Any:
        key = (tenant, tuple(sorted(post_ids)))
        if key not in self._d:
            self._d[key] = self.posts.decisions(tenant, post_ids)
        return self._d[key]

    def factchecks(self, ids: Any) -> Any:
        return self.posts.factchecks(ids)


def is_fresh(qid: str) -> bool:
    return int(hashlib.sha1(qid.encode()).hexdigest(), 16) % 10 < 3


def oracle(matches: list[dict[str, Any]], relevant: set[str]) -> dict[str, Any]:
    shown = [m["id"] for m in matches[:5]]
    hit = next((fc for fc in shown if fc in relevant), None)
    return {"action": "confirm", "factcheck_id": hit} if hit else {"action": "none"}


def summary(rows: list[dict[str, Any]], t: tuple[float, str]) -> dict[str, Any]:
    n = len(rows)
    answered = [r for r in rows if r["by_t"][t]["memory"]]
    right = [r for r in answered if r["by_t"][t]["top"] in r["relevant"]]
    return {"posts": n, "answered_by_memory": round(len(answered) / n, 4) if n else None,
            "precision": round(len(right) / len(answered), 4) if answered else None,
            "rejected_came_back": round(sum(r["by_t"][t]["rejected_back"] for r in rows) / n, 4) if n else None,
            "S@1_before": round(sum(r["top_before"] in r["relevant"] for r in rows) / n, 4) if n else None,
            "S@1_after": round(sum(r["by_t"][t]["top"] in r["relevant"] for r in rows) / n, 4) if n else None}


def query_pairs(dataset: Any, embedder: Any, thresholds: list[float]) -> dict[str, Any]:
    """How often two different queries of the dataset are as close as a re-post (no OpenSearch):
    per threshold, the pairs at or above it that share a qrels fact-check (the same claim: memory
    would be right) and those that do not (memory would be wrong), with the same-claim test too."""
    import numpy as np

    from plugin.search.duplicates import post_words
    from plugin.search.duplicates import similar

    qrels = dataset.qrels["all"]
    qs = [q for q in dataset.queries if q["id"] in qrels]
    vecs = np.asarray([PostVectors.vector(embedder, q["text"]) for q in qs])
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    sims = vecs @ vecs.T
    bags = [post_words(q["text"]) for q in qs]
    out: dict[str, Any] = {"queries": len(qs), "pairs": len(qs) * (len(qs) - 1) // 2}
    i, j = np.triu_indices(len(qs), 1)
    same = np.array([bool(qrels[qs[a]["id"]] & qrels[qs[b]["id"]]) for a, b in zip(i, j)])
    claim = np.array([similar(bags[a], bags[b], DUPLICATE_JACCARD) for a, b in zip(i, j)])
    for t in thresholds:
        close = sims[i, j] >= t
        out[str(t)] = {"same_claim_pairs": int((close & same).sum()),
                       "different_claim_pairs": int((close & ~same).sum()),
                       "different_claim_pairs_or_same_claim_test": int(((close | claim) & ~same).sum())}
    return out


class PostVectors:
    """A post's memory vector without a store (``PostMemory.vector``'s recipe)."""

    @staticmethod
    def vector(embedder: Any, text: str) -> list[float]:
        from plugin.search.normalize import normalize_post

        return list(embedder.encode_queries([normalize_post(text) or text.strip()])[0])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default="samples/clef2020")
    p.add_argument("--reposts", type=int, default=2, help="re-posts of each original")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--thresholds", default=",".join(map(str, THRESHOLDS)))
    p.add_argument("--limit", type=int, default=0, help="at most this many queries (0: all)")
    p.add_argument("--pairs-only", action="store_true",
                   help="only how close the dataset's different queries come (no OpenSearch)")
    args = p.parse_args()
    thresholds = [float(x) for x in args.thresholds.split(",")]
    if args.pairs_only:
        from plugin.embedding import load_embedder

        print(json.dumps(query_pairs(load_dataset(args.dataset), load_embedder(Settings()), thresholds), indent=2))
        return
    tag = uuid.uuid4().hex[:8]
    base = Settings()
    if base.embedding_model == TEST_MODEL:
        from plugin.build.models import build_models

        build_models(base)
    settings = base.model_copy(update={"redis_prefix": f"bench-mem-{tag}",
                                       **{n: f"bench-mem-{n.removesuffix('_index')}-{tag}" for n in POST_INDEXES}})
    store = Store(settings)
    services = Services(settings, store=store)
    dataset = load_dataset(args.dataset)
    t0 = time.perf_counter()
    alias, ingest = ensure_dataset_index(store, services.embedder, dataset, settings)
    settings = settings.model_copy(update={"index": alias})
    services = Services(settings, store=store, embedder=services.embedder)
    tenant = f"stream-{tag}"
    matcher = services.matcher()
    qrels = dataset.qrels["all"]
    queries = [q for q in dataset.queries if q["id"] in qrels]
    queries = queries[:args.limit] if args.limit else queries
    rng = random.Random(args.seed)
    out: dict[str, Any] = {"dataset": str(args.dataset), "config": matcher.config.name,
                           "embedding_model": services.embedder.name, "ingest": ingest,
                           "thresholds": thresholds, "reposts_per_original": args.reposts}
    try:
        def match(post: dict[str, Any]) -> dict[str, Any]:
            return matcher.match(MatchRequest.from_mapping(post)).to_dict()

        # 1. originals, decided by the oracle
        originals = [q for q in queries if not is_fresh(q["id"])]
        rejected: dict[str, set[str]] = {}
        decided = {"confirm": 0, "none": 0, "no_matches": 0}
        ts = time.perf_counter()
        for q in originals:
            post = {"id": q["id"], "text": q["text"], "lang": q.get("lang"), "date": q.get("date")}
            # the one match path, in the configuration this stream was measured with
            found = match_post(services.matching, MatchRequest.from_mapping(post), tenant,
                               config=matcher.config.name, post=post)
            result = found.to_dict()
            services.posts.remember(tenant, post, result["lang"])
            services.review.record_item(tenant, post["id"], post["text"], result["lang"],
                                        post.get("date"), None, found)
            if not result["matches"]:
                decided["no_matches"] += 1
                continue
            (d,) = services.review.decide(tenant, "oracle", [{"post_id": post["id"],
                                                               **oracle(result["matches"], qrels[q["id"]])}])
            decided[d.action.value] += 1
            rejected[q["id"]] = {fc for fc, ok in pairs_of(d) if not ok}
        originals_s = time.perf_counter() - ts
        for index in (settings.posts_index, settings.decisions_index):
            store.refresh(index)

        # 2. re-posts and fresh posts, at every threshold
        stream = [(f"{q['id']}~r{i}", q, *repost(q["text"], rng)) for q in originals for i in range(args.reposts)]
        stream += [(q["id"], q, q["text"], []) for q in queries if is_fresh(q["id"])]
        reader = Once(services.posts)
        rows: dict[str, list[dict[str, Any]]] = {"reposts": [], "fresh": []}
        sims: list[float] = []
        fresh_sims: list[float] = []
        ts = time.perf_counter()
        for post_id, q, text, edits in stream:
            post = {"id": post_id, "text": text, "lang": q.get("lang"), "date": q.get("date")}
            before = match(post)
            row = {"relevant": qrels[q["id"]], "top_before": before["matches"][0]["id"] if before["matches"] else None,
                   "by_t": {}}
            for t, (variant, jaccard) in itertools.product(thresholds, VARIANTS.items()):
                after = Memory(reader, min_similarity=t, neighbours=settings.memory_neighbours,
                               same_claim=jaccard).apply(tenant, post, before)
                top = after["matches"][0] if after["matches"] else {}
                row["by_t"][t, variant] = {"memory": top.get("reason") == CONFIRMED_BY_DESK, "top": top.get("id"),
                                  "rejected_back": bool(edits) and bool(
                                      rejected.get(q["id"], set()) & {m["id"] for m in after["matches"]})}
            found = reader.neighbours(tenant, reader.vector(text), settings.memory_neighbours)
            if edits:
                near = [n.similarity for n in found if n.post_id == q["id"]]
                sims.append(near[0] if near else -1.0)
            else:  # how close a post that is not a re-post comes to the stream's others
                fresh_sims.append(max((n.similarity for n in found), default=-1.0))
            services.posts.remember(tenant, post, before["lang"])
            rows["reposts" if edits else "fresh"].append(row)
        stream_s = time.perf_counter() - ts
        out.update({
            "originals": len(originals), "decided": decided,
            "reposts": len(rows["reposts"]), "fresh": len(rows["fresh"]),
            "repost_similarity_to_original": {
                "min": round(min(sims), 4), "p5": round(sorted(sims)[len(sims) // 20], 4),
                "median": round(statistics.median(sims), 4),
                "not_among_neighbours": sum(s < -0.5 for s in sims)} if sims else None,
            "fresh_nearest_similarity": {
                "max": round(max(fresh_sims), 4), "p95": round(sorted(fresh_sims)[len(fresh_sims) * 19 // 20], 4),
                "median": round(statistics.median(fresh_sims), 4)} if fresh_sims else None,
            "by_threshold": {str(t): {v: {"reposts": summary(rows["reposts"], (t, v)),
                                          "fresh": summary(rows["fresh"], (t, v))} for v in VARIANTS}
                             for t in thresholds},
            "chosen_threshold": settings.memory_min_similarity,
            "seconds": {"originals": round(originals_s, 1), "stream": round(stream_s, 1),
                        "per_original_ms": round(originals_s * 1e3 / max(1, len(originals)), 1),
                        "total": round(time.perf_counter() - t0, 1)}})
        print(json.dumps(out, indent=2))
    finally:
        KV(settings).delete_namespace()
        for index in (getattr(settings, n) for n in POST_INDEXES):
            store.delete_index(f"{index}-v*")
            store.delete_index_template(f"factsieve-{index}")


if __name__ == "__main__":
    main()
