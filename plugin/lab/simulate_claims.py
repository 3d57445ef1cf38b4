"""A simulated day of claims (``factsieve learn simulate-claims``): a dataset's posts and their
re-posts played through the post job, one decision per claim by an oracle desk.

**The stream.** Each query of the chosen splits is posted once, and ``reposts`` more times with
small edits (``plugin.learn.memory_reposts``: a retweet prefix, a link, dropped or swapped words,
an emoji …) at random later moments of the day; everything goes through the post job's own code
(``run_post``: match with the tenant's learning, the claim join, the review item), under the
simulation's own tenant and indexes (``simulate.sim_settings``).

**The desk.** When a post arrives whose claim nobody has decided and the post was not answered
by an earlier decision, the oracle reviewer decides **the claim** once
(``claiming.decide_claim``): confirm the post's relevant fact-check when it is among the five
shown, else ``none``. A post whose best match the desk's earlier word put there (``reason``:
``confirmed-for-claim`` or ``confirmed-by-desk``) is **answered without a person**; its answer is
right when that fact-check is one of the post's qrels.

**Reported**: posts, claims and gold claims (queries that share a fact-check are one), the
pairwise precision and recall of the grouping over the whole stream (re-posts included),
decisions needed without claims (every post is an item: one decision each) and with claims (the
claim decisions made), and the share of posts answered without a person, with its precision.
"""
from __future__ import annotations

import random
import time
import uuid
from collections.abc import Mapping, Sequence, Set
from typing import Any

from plugin.lab.clusters import gold_claims, scores
from plugin.lab.simulate import SHOWN
from plugin.models import DESK_ANSWERED
from plugin.learn.memory_reposts import repost

ANSWERED = DESK_ANSWERED


def stream_of(queries: Sequence[Mapping[str, Any]], reposts: int, seed: int) -> list[dict[str, Any]]:
    """The day's posts in order: each query at a random moment, its re-posts after it (pure)."""
    rng = random.Random(seed)
    posts = []
    for q in queries:
        t = rng.random()
        posts.append({"id": f"{q['id']}~0", "query": str(q["id"]), "text": q["text"], "lang": q.get("lang"), "t": t})
        for i in range(1, reposts + 1):
            text, _ = repost(q["text"], rng)
            posts.append({"id": f"{q['id']}~{i}", "query": str(q["id"]), "text": text, "lang": q.get("lang"),
                          "t": t + rng.random() * (1 - t)})
    return sorted(posts, key=lambda p: (p["t"], p["id"]))


def oracle_action(candidates: Sequence[Mapping[str, Any]], relevant: Set[str]) -> dict[str, Any]:
    hit = next((c["id"] for c in candidates[:SHOWN] if c["id"] in relevant), None)
    return {"action": "confirm", "factcheck_id": hit} if hit else {"action": "none"}


def simulate_claims(sim: Any, dataset: Any, *, splits: Sequence[str] | None, reposts: int = 2, seed: int = 0,
                    config: str | None = None) -> dict[str, Any]:
    """The report (see the module's docstring); ``sim``: the simulation's ``Services``."""
    from plugin.service import claiming, handlers

    wanted = set(splits) if splits else None
    qrels = dataset.qrels["all"]
    queries = [q for q in dataset.queries if str(q["id"]) in qrels and (wanted is None or q.get("split") in wanted)]
    if not queries:
        raise ValueError("no queries with qrels in the chosen splits")
    tenant = f"simc-{uuid.uuid4().hex[:8]}"
    posts = stream_of(queries, reposts, seed)
    decided: set[str] = set()
    claim_of: dict[str, str] = {}
    auto, auto_right, decisions, open_after = 0, 0, 0, 0
    t0 = time.perf_counter()
    for p in posts:
        body = {"id": p["id"], "text": p["text"], **({"lang": p["lang"]} if p["lang"] else {})}
        job = {"id": f"job-{p['id']}", "tenant": tenant, "input": {"post": body, **({"config": config} if config else {})}}
        out = handlers.run_post(sim, job, lambda did: None)
        sim.store.refresh(sim.settings.posts_index)
        cid = out["claim"]["claim_id"]
        claim_of[p["id"]] = cid
        matches = out["match"]["matches"]
        top = matches[0] if matches else None
        if top is not None and top.get("reason") in ANSWERED:
            auto += 1
            auto_right += top["id"] in qrels[p["query"]]
        elif cid not in decided:
            one = oracle_action(matches, qrels[p["query"]])
            claiming.decide_claim(sim.claims, sim.review, sim.posts, tenant, "oracle", cid, one["action"],
                                  one.get("factcheck_id"), origin="desk", bulk=sim.settings.review_bulk_max)
            decided.add(cid)
            decisions += 1
        else:
            open_after += 1  # its claim was decided "none": the post still needs a person
    by_query = {p["id"]: p["query"] for p in posts}
    gold_q = gold_claims([str(q["id"]) for q in queries], qrels)
    gold = {pid: gold_q[q] for pid, q in by_query.items()}
    grouping = scores(claim_of, gold)
    return {"dataset": dataset.name, "splits": sorted(wanted) if wanted else "all", "queries": len(queries),
            "reposts_per_query": reposts, "posts": len(posts), "claims": grouping["clusters"],
            "gold_claims": grouping["gold_clusters"],
            "grouping": {k: grouping[k] for k in ("pairwise_precision", "pairwise_recall", "bcubed_f1",
                                                  "predicted_pairs", "gold_pairs", "wrong_pairs")},
            "decisions": {"without_claims": len(posts), "with_claims": decisions,
                          "posts_left_for_a_person": open_after},
            "answered_without_a_person": {"posts": auto, "share": round(auto / len(posts), 4),
                                          "precision": round(auto_right / auto, 4) if auto else None},
            "seconds": round(time.perf_counter() - t0, 1)}
