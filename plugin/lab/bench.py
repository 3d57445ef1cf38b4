"""``factsieve bench``: what matching costs, and how the cost grows with the corpus.

Measures per corpus: documents, segments, size on disk, the node's heap and resident memory,
recall@10 of the approximate kNN against exact search on a sample of queries, and for a
scaled corpus its build (bulk rate, refresh, segments before the force merge, the merge); per
configuration: single-query latency p50/p95 with its parts (embedding, OpenSearch, fusion),
sustained queries/s at a given concurrency; ingest docs/s and the client's resident memory. Scaled
corpora (100k, 1M) are *synthetic*: near-duplicates of the real fact-checks, made from their
real texts and real embeddings with small perturbations instead of re-encoding (encoding 1M
texts takes hours on 2 cores). The output says so.
"""
from __future__ import annotations

import itertools
import random
import resource
import statistics
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from plugin.embedding import Embedder
from plugin.lab.bench_index import index_stats, knn_recall, node_memory
from plugin.lab.bench_levers import bm25_levers, knn_levers
from plugin.lab.evaluate.metrics import percentile
from plugin.learn.train.datasets import Dataset, ensure_dataset_index
from plugin.search.generated import GENERATED
from plugin.search.matcher import Matcher, MatchRequest
from plugin.search.normalize import normalize_post
from plugin.search.queries import VECTOR_SCRIPT
from plugin.models import Mode
from plugin.search.retrieval import RetrievalConfig
from plugin.settings import Settings
from plugin.index.store import Store
from plugin.index.templates import IndexSpec, current_index, ensure_index


#: Query vectors whose approximate kNN is compared with exact search, per corpus.
RECALL_SAMPLE = 50


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def perturb(text: str, rnd: random.Random) -> str:
    """A near-duplicate wording: one word dropped and one pair of neighbours swapped."""
    words = text.split()
    if len(words) > 3:
        del words[rnd.randrange(len(words))]
        i = rnd.randrange(len(words) - 1)
        words[i], words[i + 1] = words[i + 1], words[i]
    return " ".join(words)


def noisy_vector(vector: list[float], gen: np.random.Generator, noise: float) -> list[float]:
    """``vector`` plus Gaussian noise (σ = ``noise`` per dimension), re-normalised."""
    vec = np.asarray(vector, dtype="float32")
    vec = vec + gen.normal(0.0, noise, size=vec.shape).astype("float32")
    vec /= np.linalg.norm(vec) or 1.0
    return vec.tolist()


def base_documents(store: Store, alias: str) -> list[dict[str, Any]]:
    """Every document of ``alias``: its ``_source`` plus its ``embedding`` read back from the
    index, for building synthetic corpora without re-encoding."""
    body = {"query": {"match_all": {}}, "_source": True, "script_fields": {"embedding": VECTOR_SCRIPT}}
    docs = []
    for hit in store.scan(alias, body):
        doc = dict(hit["_source"])
        doc["embedding"] = hit["fields"]["embedding"]
        docs.append(doc)
    return docs


def synthetic_docs(base: list[dict[str, Any]], n: int, *, seed: int = 0,
                   noise: float = 0.02) -> Iterator[dict[str, Any]]:
    """``n`` synthetic fact-checks cycling over ``base`` (real documents with embeddings):
    perturbed text, embedding plus Gaussian noise (σ = ``noise`` per dimension), re-normalised."""
    rnd = random.Random(seed)
    gen = np.random.default_rng(seed)
    for j in range(n):
        src = base[j % len(base)]
        doc = {k: v for k, v in src.items() if k not in ("embedding", "id")}
        doc["id"] = f"syn-{j}"
        doc["claim"] = perturb(src.get("claim", ""), rnd)
        if doc.get("lang") and doc.get("claim_i18n"):
            doc["claim_i18n"] = {doc["lang"]: doc["claim"]}
        doc["source"] = "synthetic"
        doc["embedding"] = noisy_vector(src["embedding"], gen, noise)
        yield doc


def scaled_alias(base_alias: str, n: int) -> str:
    """The alias of ``base_alias``'s synthetic corpus of ``n`` documents (the one naming rule)."""
    return f"{base_alias}-syn{n}"


def build_scaled_index(store: Store, embedder: Embedder, base_alias: str, n: int,
                       settings: Settings, *, template: str = "factchecks",
                       make: Callable[..., Iterator[dict[str, Any]]] = synthetic_docs,
                       ) -> tuple[str, dict[str, Any] | None]:
    """A synthetic corpus of ``n`` documents made by ``make(base, n)`` from every document of
    ``base_alias``, in an index of kind ``template`` (``factchecks``, ``evidence``: the
    ``index_templates`` file); reused when it already holds ``n`` documents. Returns its alias and
    its build figures (``None`` when reused)."""
    alias = scaled_alias(base_alias, n)
    if current_index(store, alias) is not None and store.count(alias) == n:
        return alias, None
    store.delete_index(f"{alias}-v*")
    ensure_index(store, IndexSpec(alias=alias, model=embedder.name, dimension=embedder.dim,
                                  template=template))
    base = base_documents(store, base_alias)
    t0 = time.perf_counter()
    store.client.indices.put_settings(index=alias, body={"index": {"refresh_interval": "-1"}})
    docs = make(base, n)
    failed = 0
    # two halves with a refresh between: at least two segments, so that the force merge rewrites
    # them and drops the recovery source (it leaves a lone segment as it is, source included)
    for half, part in enumerate((itertools.islice(docs, n // 2), docs)):
        if half:
            store.refresh(alias)
        actions = ({"_op_type": "index", "_index": alias, "_id": d["id"], "_source": d} for d in part)
        failed += sum(1 for ok, _ in store.bulk(actions, chunk_size=500) if not ok)
    bulk_s = time.perf_counter() - t0
    store.client.indices.put_settings(index=alias, body={"index": {"refresh_interval": "1s"}})
    t1 = time.perf_counter()
    store.refresh(alias)
    refresh_s = time.perf_counter() - t1
    secs = time.perf_counter() - t0
    segments = store.segment_count(alias)
    # a commit first: the merge keeps the recovery source of every operation past the last
    # commit's checkpoint, and a load below the translog's flush threshold has none yet
    store.client.indices.flush(index=alias)
    # sent once as a task and polled (Store.force_merge): it may take longer than any client timeout
    merge_s = store.force_merge(alias, lease_timeout_s=90.0 if n >= 1000 else 0.0)
    return alias, {"docs": n, "failed": failed, "seconds": round(secs, 1),
                   "docs_per_s": round(n / bulk_s, 1), "bulk_s": round(bulk_s, 1),
                   "refresh_s": round(refresh_s, 1), "segments_before_merge": segments,
                   "force_merge_s": round(merge_s, 1), "synthetic": True,
                   "note": "bulk indexing of precomputed vectors (no embedding), then a force merge"}


def latency(matcher: Matcher, texts: list[str], mode: Mode, k: int = 10,
            budget_ms: float | None = None) -> dict[str, Any]:
    """p50/p95 of one match at a time; ``budget_ms``: the live rerank budget each match gets (a
    configuration with a reranker), and how many matches were reranked within it."""
    took, parts, paths, reranked = [], {}, {}, 0
    for t in texts:
        t0 = time.perf_counter()
        r = matcher.match(MatchRequest(text=t, mode=mode, k=k, rerank_budget_ms=budget_ms))
        took.append((time.perf_counter() - t0) * 1e3)
        for key, ms in r.timings_ms.items():
            parts.setdefault(key, []).append(ms)
        paths[r.fusion] = paths.get(r.fusion, 0) + 1
        reranked += r.reranked
    out = {"p50": round(percentile(took, 0.5), 2), "p95": round(percentile(took, 0.95), 2),
           "parts_p50": {k: round(statistics.median(v), 2) for k, v in parts.items()},
           "fusion": paths}
    if budget_ms is not None:
        out.update(rerank_budget_ms=budget_ms, reranked=reranked)
    return out


def throughput(matcher: Matcher, texts: list[str], mode: Mode, concurrency: int,
               seconds: float, budget_ms: float | None = None) -> dict[str, Any]:
    """Sustained queries/s with ``concurrency`` threads for about ``seconds`` (bounded)."""
    deadline = time.perf_counter() + seconds
    counts, errors = [0] * concurrency, [0] * concurrency

    def worker(i: int) -> None:
        j = i
        while time.perf_counter() < deadline:
            try:
                matcher.match(MatchRequest(text=texts[j % len(texts)], mode=mode, k=10,
                                           rerank_budget_ms=budget_ms))
                counts[i] += 1
            except Exception:  # a benchmark counts failures instead of stopping
                errors[i] += 1
            j += concurrency

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(worker, range(concurrency)))
    secs = time.perf_counter() - t0
    return {"concurrency": concurrency, "queries": sum(counts), "errors": sum(errors),
            "qps": round(sum(counts) / secs, 1)}


def bench(store: Store, embedder: Embedder, settings: Settings, dataset: Dataset,
          configs: dict[str, RetrievalConfig], *, sizes: list[int], concurrency: int,
          n_queries: int, seconds: float, mode: Mode = Mode.AUTO,
          hosted: bool = False, rerankers: dict[str, Any] | None = None,
          levers: bool = False) -> dict[str, Any]:
    """``hosted``: also the stored template over plain HTTP and ingest through the hosted model
    (``plugin.lab.hosted_bench``), on the real corpus. A configuration with a rerank stage is
    measured as the live path serves it, within ``settings.rerank_budget_ms``, when
    ``rerankers`` has its model; otherwise it is skipped (and said so)."""
    alias, ingest_stats = ensure_dataset_index(store, embedder, dataset, settings)
    texts = [q["text"] for q in dataset.queries][:n_queries]
    # warm-up: model session, OpenSearch caches
    warm = Matcher(store, embedder, settings, alias=alias, config=next(iter(configs.values())))
    for t in texts[:10]:
        warm.match(MatchRequest(text=t, mode=mode))
    t0 = time.perf_counter()
    embedder.encode_passages([q["text"] for q in dataset.queries[:256]])
    embed_rate = 256 / (time.perf_counter() - t0)
    out: dict[str, Any] = {"dataset": str(dataset.path), "embedding_model": embedder.name,
                           "embed_passages_per_s": round(embed_rate, 1), "corpora": {}}
    if ingest_stats:
        out["ingest"] = ingest_stats
    corpora = [(f"{dataset.name} ({dataset.n_factchecks} real)", alias, None)]
    for n in sizes:
        scaled, stats = build_scaled_index(store, embedder, alias, n, settings)
        corpora.append((f"{n} synthetic near-duplicates", scaled, stats))
    sample = embedder.encode_queries(texts[:RECALL_SAMPLE])
    lever_texts = [normalize_post(t) for t in texts]
    langs = {q.get("lang") for q in dataset.queries[:n_queries]}
    lever_lang = langs.pop() if len(langs) == 1 else None
    for label, idx, stats in corpora:
        entry: dict[str, Any] = {"index": idx, **index_stats(store, idx),
                                 "knn_recall": knn_recall(store, idx, sample), "configs": {}}
        if stats:
            entry["build"] = stats
        for name, cfg in configs.items():
            if {r.query for r in cfg.retrievers} & set(GENERATED):
                continue  # the live path's cost: LLM variants belong to jobs
            reranker = (rerankers or {}).get(name)
            if cfg.rerank is not None and reranker is None:
                entry.setdefault("skipped", {})[name] = f"reranker {cfg.rerank.model!r} unavailable"
                continue
            budget = settings.rerank_budget_ms if reranker is not None else None
            matcher = Matcher(store, embedder, settings, alias=idx, config=cfg, reranker=reranker)
            entry["configs"][name] = {"latency_ms": latency(matcher, texts, mode, budget_ms=budget),
                                      "throughput": throughput(matcher, texts, mode, concurrency, seconds,
                                                               budget_ms=budget)}
        if levers:
            entry["levers"] = {"bm25": bm25_levers(store, idx, lever_texts, lever_lang),
                               "knn": knn_levers(store, idx, sample)}
        if hosted and stats is None:
            entry["template"] = _template_entry(store, settings, idx, texts, mode)
        entry["node_after_queries"] = node_memory(store)
        out["corpora"][label] = entry
    if hosted:
        from plugin.lab.hosted_bench import ingest_rates

        out["ingest_paths"] = ingest_rates(store, embedder, settings, dataset)
    out["client_max_rss_mb"] = round(_rss_mb(), 1)
    return out


def _template_entry(store: Store, settings: Settings, alias: str, texts: list[str],
                    mode: Mode) -> dict[str, Any]:
    from plugin.errors import NotFound
    from plugin.lab.hosted_bench import template_latency

    try:
        store.request("get search template", "GET", f"/_scripts/{settings.search_template}")
        got = template_latency(settings.opensearch_url.split(",")[0], alias, settings.search_template, texts[:10],
                               mode=mode.value)  # warm-up
        got = template_latency(settings.opensearch_url.split(",")[0], alias, settings.search_template, texts,
                               mode=mode.value)
    except NotFound as exc:
        return {"skipped": f"{exc} (the template is stored by `factsieve init` on a cluster with ML Commons)"}
    return {"id": settings.search_template, "config": settings.template_config, "latency_ms": got}
