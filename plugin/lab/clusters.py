"""``factsieve evaluate-clusters``: a dataset's queries played as one tenant's stream of posts,
joined into claims online by ``plugin.claims.cluster``, against the gold claims.

**Gold.** Queries that share a qrels fact-check make one claim (transitively); a query with none
is its own. **Scores** (pure functions here): pairwise precision and recall over the pairs of
posts put in one claim, and B-cubed F1. Most gold claims in these sets are single posts, so
B-cubed F1 is above 0.9 even when nothing is grouped: the pairs are what to judge by.

**The stream** mirrors the post job: posts arrive in the dataset's order (by date where it has
them), each is compared with the earlier posts the posts index would return for it (its
``neighbours`` nearest by embedding; the earlier posts with the same best match; for the
``bm25`` signal, its ``neighbours`` best by BM25 among earlier posts) and joins as
``cluster.choose`` says. Embeddings are the posts index's (``PostMemory.vector``'s: the base
model's query side over the normalised post); the best match and its confidence are the
matcher's under the named configuration, in ``auto`` mode, over the dataset's index.

**The table**: for each embedding threshold, the scores of the rule with that threshold and the
other signals as given; ``chosen`` is the lowest threshold whose pairwise precision is at least
``min_precision`` (the most recall that allows), or the highest threshold when none is.
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from plugin.claims.cluster import Earlier, JoinRule, PostSignals, choose

#: the embedding thresholds the table walks
THRESHOLDS = tuple(round(0.80 + 0.01 * i, 2) for i in range(20))
#: what a wrong merge costs against a split: the precision the chosen threshold keeps
MIN_PRECISION = 0.95


def gold_claims(query_ids: Sequence[str], qrels: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """``{query id: gold claim id}``: queries sharing a fact-check are one claim (union-find)."""
    parent = {q: q for q in query_ids}

    def root(q: str) -> str:
        while parent[q] != q:
            parent[q] = parent[parent[q]]
            q = parent[q]
        return q

    first: dict[str, str] = {}
    for q in query_ids:
        for fc in sorted(qrels.get(q, ())):
            if fc in first:
                a, b = root(q), root(first[fc])
                if a != b:
                    parent[max(a, b)] = min(a, b)
            else:
                first[fc] = q
    return {q: root(q) for q in query_ids}


def _pairs(assign: Mapping[str, str]) -> set[tuple[str, str]]:
    groups: dict[str, list[str]] = defaultdict(list)
    for item, c in assign.items():
        groups[c].append(item)
    out: set[tuple[str, str]] = set()
    for members in groups.values():
        members.sort()
        out.update((a, b) for i, a in enumerate(members) for b in members[i + 1:])
    return out


def pairwise(pred: Mapping[str, str], gold: Mapping[str, str]) -> dict[str, Any]:
    """Pairwise precision and recall of ``pred`` against ``gold`` (``{item: cluster}``, the same
    items); a side with no pairs has ``None`` for its score."""
    p, g = _pairs(pred), _pairs(gold)
    hit = len(p & g)
    return {"pairwise_precision": round(hit / len(p), 4) if p else None,
            "pairwise_recall": round(hit / len(g), 4) if g else None,
            "predicted_pairs": len(p), "gold_pairs": len(g), "right_pairs": hit}


def bcubed_f1(pred: Mapping[str, str], gold: Mapping[str, str]) -> float:
    """B-cubed F1 (Bagga & Baldwin): per item, the precision and recall of its predicted cluster
    against its gold one, averaged over items."""
    by_pred: dict[str, set[str]] = defaultdict(set)
    by_gold: dict[str, set[str]] = defaultdict(set)
    for item in pred:
        by_pred[pred[item]].add(item)
        by_gold[gold[item]].add(item)
    ps, rs = [], []
    for item in pred:
        a, b = by_pred[pred[item]], by_gold[gold[item]]
        both = len(a & b)
        ps.append(both / len(a))
        rs.append(both / len(b))
    if not ps:
        return 0.0
    p, r = sum(ps) / len(ps), sum(rs) / len(rs)
    return round(2 * p * r / (p + r), 4) if p + r else 0.0


def scores(pred: Mapping[str, str], gold: Mapping[str, str]) -> dict[str, Any]:
    """The pairwise scores, B-cubed F1 and the cluster counts of one clustering."""
    pw = pairwise(pred, gold)
    return {**pw, "wrong_pairs": pw["predicted_pairs"] - pw["right_pairs"], "bcubed_f1": bcubed_f1(pred, gold),
            "clusters": len(set(pred.values())), "gold_clusters": len(set(gold.values()))}


def bm25_matrix(texts: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75) -> np.ndarray:
    """``m[i, j]``: post ``j``'s BM25 score for post ``i``'s words over post ``i``'s score for
    its own (1.0 on the diagonal; IDF over the whole set, a lab approximation of an index)."""
    n = len(texts)
    df: Counter[str] = Counter()
    for t in texts:
        df.update(set(t))
    idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}
    avg = sum(len(t) for t in texts) / max(n, 1) or 1.0
    tfs = [Counter(t) for t in texts]
    m = np.zeros((n, n), dtype=np.float32)
    for j, tf in enumerate(tfs):
        norm = k1 * (1 - b + b * len(texts[j]) / avg)
        for i, q in enumerate(tfs):
            m[i, j] = sum(idf[w] * tf[w] * (k1 + 1) / (tf[w] + norm) for w in q if w in tf)
    diag = np.diag(m).copy()
    diag[diag == 0] = 1.0
    return m / diag[:, None]


def stream(posts: Sequence[PostSignals], sims: np.ndarray, rule: JoinRule,
           bm25: np.ndarray | None = None) -> dict[str, str]:
    """``{post id: claim id}`` after playing ``posts`` in order (a claim's id is its first
    post's), each compared with the earlier posts the posts index would return (see the module's
    docstring)."""
    claim: dict[str, str] = {}
    k = rule.neighbours
    for i, post in enumerate(posts):
        if i == 0:
            claim[post.post_id] = post.post_id
            continue
        row = sims[i, :i]
        near = set(np.argsort(-row, kind="stable")[:k].tolist())
        if bm25 is not None and rule.bm25 is not None:
            near |= set(np.argsort(-bm25[i, :i], kind="stable")[:k].tolist())
        if rule.same_answer is not None and post.answer:
            near |= {j for j in range(i) if posts[j].answer == post.answer}
        earlier = [Earlier(posts[j], claim[posts[j].post_id], float(row[j]),
                           None if bm25 is None else float(bm25[i, j])) for j in sorted(near)]
        joined = choose(rule, post, earlier)
        claim[post.post_id] = joined.claim_id or post.post_id
    return claim


def threshold_table(posts: Sequence[PostSignals], sims: np.ndarray, gold: Mapping[str, str],
                    rule: JoinRule, *, bm25: np.ndarray | None = None,
                    thresholds: Sequence[float] = THRESHOLDS,
                    min_precision: float = MIN_PRECISION) -> dict[str, Any]:
    """``{"chosen", "thresholds"}`` (see the module's docstring), the rule's other signals as
    given; without the embedding signal, one row."""
    rows = []
    walk = thresholds if rule.min_similarity is not None else (None,)
    for t in walk:
        pred = stream(posts, sims, replace(rule, min_similarity=t), bm25)
        rows.append({"threshold": t, **scores(pred, gold)})
    ok = [r for r in rows if r["pairwise_precision"] is None or r["pairwise_precision"] >= min_precision]
    chosen = min(ok, key=lambda r: (r["threshold"] or 0)) if ok else rows[-1]
    return {"chosen": chosen, "thresholds": rows, "min_precision": min_precision}


#: the grid ``choose_rule`` walks besides the embedding thresholds: (same-answer confidence,
#: same-answer similarity)
ANSWER_GRID = tuple((c, t) for c in (0.5, 0.7, 0.8, 0.9, 0.95) for t in (0.0, 0.8, 0.85, 0.87, 0.9))


def choose_rule(posts: Sequence[PostSignals], sims: np.ndarray, gold: Mapping[str, str], rule: JoinRule, *,
                bm25: np.ndarray | None = None, grid: Sequence[tuple[float, float]] = ANSWER_GRID,
                min_precision: float = MIN_PRECISION) -> dict[str, Any]:
    """The rule with the most pairwise recall at ``min_precision`` or more over the embedding
    thresholds and ``grid`` (ties: the lower embedding threshold, which links posts no fact-check
    answers, then the higher same-answer confidence and similarity), with its row: what ``join.json`` is
    chosen by, on tuning posts only."""
    best: tuple[tuple[float, ...], JoinRule, dict[str, Any]] | None = None
    for conf, sim in grid if rule.same_answer is not None else ((None, 0.0),):
        base = replace(rule, same_answer=conf, same_answer_similarity=sim)
        for row in threshold_table(posts, sims, gold, base, bm25=bm25, min_precision=min_precision)["thresholds"]:
            if row["pairwise_precision"] is not None and row["pairwise_precision"] < min_precision:
                continue
            key = (row["pairwise_recall"] or 0.0, -(row["threshold"] or 0.0), conf or 0.0, sim)
            if best is None or key > best[0]:
                best = (key, replace(base, min_similarity=row["threshold"]), row)
    if best is None:
        return {"rule": None, "row": None}
    return {"rule": {k: v for k, v in vars(best[1]).items()}, "row": best[2]}


def at_threshold(posts: Sequence[PostSignals], sims: np.ndarray, gold: Mapping[str, str],
                 rule: JoinRule, bm25: np.ndarray | None = None) -> dict[str, Any]:
    """The scores of ``rule`` as it is (one row)."""
    return {"threshold": rule.min_similarity, **scores(stream(posts, sims, rule, bm25), gold)}


def signal_rows(posts: Sequence[PostSignals], sims: np.ndarray, gold: Mapping[str, str],
                rule: JoinRule, bm25: np.ndarray | None,
                sets: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """For each named signal set, the rule restricted to it at its own threshold table's choice."""
    probe = replace(rule, bm25=rule.bm25 if rule.bm25 is not None else BM25_PROBE)
    return {name: threshold_table(posts, sims, gold, probe.only(signals), bm25=bm25)["chosen"]
            for name, signals in sets.items()}


#: the normalised BM25 score from which the ``+bm25`` row links when the rule has none
BM25_PROBE = 0.5


#: what each signal adds, as the docs report it
SIGNAL_SETS: dict[str, tuple[str, ...]] = {
    "embedding": ("embedding",),
    "+bm25": ("embedding", "bm25"),
    "+same_claim": ("embedding", "same_claim"),
    "+same_answer": ("embedding", "same_claim", "same_answer"),
    "+image": ("embedding", "same_claim", "same_answer", "image"),
}


def prepare(queries: Sequence[Mapping[str, Any]], vector: Callable[[str], Sequence[float]],
            answer: Callable[[Mapping[str, Any]], tuple[str | None, float | None]],
            words: Callable[[str], frozenset[str]]) -> tuple[list[PostSignals], np.ndarray, np.ndarray]:
    """The stream's posts (in arrival order: by date where given, else as listed), their cosine
    similarity matrix and BM25 matrix (I/O through the callables)."""
    order = sorted(range(len(queries)), key=lambda i: (queries[i].get("date") or "", i))
    qs = [queries[i] for i in order]
    vecs = np.asarray([vector(q["text"]) for q in qs], dtype=np.float32)
    vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
    posts = []
    for q in qs:
        fc, conf = answer(q)
        posts.append(PostSignals(str(q["id"]), words(q["text"]), fc, conf, q.get("image_hash")))
    tokens = [sorted(p.words) for p in posts]
    return posts, vecs @ vecs.T, bm25_matrix(tokens)


def evaluate_clusters(store: Any, embedder: Any, settings: Any, dataset: Any, config: Any, *,
                      splits: Iterable[str] | None, rule: JoinRule, threshold: float | None = None,
                      compare: bool = False, choose: bool = False, reranker: Any = None) -> dict[str, Any]:
    """The JSON ``evaluate-clusters`` prints: the threshold table of ``rule`` over the dataset's
    queries of ``splits`` (all when ``None``), ``served`` (the rule as given, or at
    ``threshold``), with ``compare`` the chosen row of each signal set (``SIGNAL_SETS``), with
    ``choose`` the best rule over the embedding thresholds and the same-answer grid
    (``choose_rule``)."""
    from plugin.search.duplicates import post_words
    from plugin.learn.train.datasets import ensure_dataset_index
    from plugin.models import Mode
    from plugin.search.matcher import Matcher, MatchRequest
    from plugin.search.normalize import normalize_post

    wanted = set(splits) if splits is not None else None
    queries = [q for q in dataset.queries if wanted is None or q.get("split") in wanted]
    if not queries:
        raise ValueError(f"no queries in split(s) {sorted(wanted or [])} of {dataset.name}")
    alias, _ = ensure_dataset_index(store, embedder, dataset, settings)
    matcher = Matcher(store, embedder, settings, alias=alias, config=config, reranker=reranker)

    def vector(text: str) -> Sequence[float]:
        return embedder.encode_queries([normalize_post(text) or text.strip()])[0]

    def answer(q: Mapping[str, Any]) -> tuple[str | None, float | None]:
        found = matcher.match(MatchRequest(text=q["text"], lang=q.get("lang"), mode=Mode.AUTO, k=10), config)
        if not found.matches:
            return None, None
        top = found.matches[0]
        return str(top["id"]), top.get("confidence")

    posts, sims, bm25 = prepare(queries, vector, answer, post_words)
    gold = gold_claims([p.post_id for p in posts], dataset.qrels["all"])
    table = threshold_table(posts, sims, gold, rule, bm25=bm25)
    served = rule if threshold is None else replace(rule, min_similarity=threshold)
    out: dict[str, Any] = {"dataset": dataset.name, "split": ",".join(sorted(wanted)) if wanted else "all",
                           "posts": len(posts), "config": config.name, "mode": "auto",
                           "rule": {k: v for k, v in vars(served).items()},
                           "served": at_threshold(posts, sims, gold, served, bm25), **table}
    if choose:
        out["choose"] = choose_rule(posts, sims, gold, rule, bm25=bm25)
    if compare:
        out["signals"] = signal_rows(posts, sims, gold, rule, bm25, SIGNAL_SETS)
    return out
