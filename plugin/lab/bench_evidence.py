"""``factsieve bench-evidence``: what the evidence index costs, and how the cost grows.

The fact-check bench's treatment (``plugin.lab.bench``) applied to evidence passages. The real
corpus is the AVeriTeC evaluation pool (``plugin.lab.verification.build_pool``: the gold answers'
passages of the claims, with their embeddings); scaled corpora are *synthetic* near-duplicates of
its passages, made without re-encoding (``synthetic_passages``), built and force-merged by the
bench's ``build_scaled_index``. Per corpus: documents, segments, size on disk and by Lucene file,
the node's heap and resident set, recall@10 of the approximate kNN against exact search, the
build (bulk rate, refresh, merge), and the latency of the evidence search itself: the
``EvidenceRetriever`` the verifier and ``evidence-search`` run (its pure body builders through
``Store``), for AVeriTeC claims searched as the verifier searches them (before the claim date,
never the claim's fact-checking article). Then a projection (``plugin.lab.projection``) of disk,
vector files, heap and latency to ``target`` passages, from the measured sizes.
"""
from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import date
from typing import Any

import numpy as np

from plugin.evidence.retrieve import EvidenceQuery, EvidenceRetriever
from plugin.lab.bench import RECALL_SAMPLE, build_scaled_index, noisy_vector, perturb, scaled_alias
from plugin.lab.bench_index import drop_index, index_files, index_stats, knn_recall, node_memory
from plugin.lab.evaluate.metrics import percentile
from plugin.lab.projection import project, vector_memory
from plugin.models import MAX_TEXT_CHARS
from plugin.verify.config import VerificationConfig

#: Passages a search returns: the verifier's default (``VerificationConfig.passages``).
K = VerificationConfig.model_fields["passages"].default


def hnsw_m() -> int:
    """The HNSW graph degree ``m`` the ``factsieve-knn`` component builds with."""
    from plugin.index.bodies import load_template

    knn = load_template("component/factsieve-knn")["template"]["mappings"]["properties"]["embedding"]
    return int(knn["method"]["parameters"]["m"])


def synthetic_passages(base: Sequence[dict[str, Any]], n: int, *, seed: int = 0,
                       noise: float = 0.02) -> Iterator[dict[str, Any]]:
    """``n`` synthetic passages cycling over ``base`` (real passages with embeddings, as
    ``base_documents`` reads them): perturbed ``text`` (and its analysed ``text_i18n``), the
    embedding plus noise, re-normalised. Every field the evidence search reads is kept (dates,
    domains, claim, position, title); from the second cycle on each copy is another page
    (``url``, ``url_key`` and ``doc_id`` suffixed ``/syn<cycle>``), so the search's at-most-two
    passages of one page rule sees as many pages as a real store of that size would."""
    rnd = random.Random(seed)
    gen = np.random.default_rng(seed)
    for j in range(n):
        src = base[j % len(base)]
        cycle = j // len(base)
        doc = {k: v for k, v in src.items() if k not in ("embedding", "id")}
        doc["id"] = f"syn-{j}"
        if cycle:
            for key in ("url", "url_key", "doc_id"):
                if doc.get(key):
                    doc[key] = f"{doc[key]}/syn{cycle}"
        doc["text"] = perturb(src.get("text", ""), rnd)
        if doc.get("lang") and doc.get("text_i18n"):
            doc["text_i18n"] = {doc["lang"]: doc["text"]}
        doc["source"] = "synthetic"
        doc["embedding"] = noisy_vector(src["embedding"], gen, noise)
        yield doc


def claim_query(claim: dict[str, Any], k: int = K) -> EvidenceQuery:
    """The evidence search the verifier runs for an AVeriTeC claim (``Verifier._search`` of
    ``verification.request_for``): the claim's text, before its date, never its fact-checking
    article."""
    article = claim.get("fact_checking_article")
    return EvidenceQuery(text=str(claim["claim"])[:MAX_TEXT_CHARS],
                         before=date.fromisoformat(claim["date"]) if claim.get("date") else None,
                         exclude_urls=(article,) if article else (), k=k)


def search_latency(retriever: EvidenceRetriever, queries: Sequence[EvidenceQuery]) -> dict[str, Any]:
    """p50/p95 of one evidence search at a time, its parts' p50 (embedding, the two sub-queries,
    the fetch) and the passages found per search."""
    took, parts, found = [], {}, []
    for q in queries:
        t0 = time.perf_counter()
        r = retriever.search(q)
        took.append((time.perf_counter() - t0) * 1e3)
        for key, ms in r.timings_ms.items():
            parts.setdefault(key, []).append(ms)
        found.append(len(r.passages))
    return {"queries": len(took), "p50": round(percentile(took, 0.5), 2),
            "p95": round(percentile(took, 0.95), 2),
            "parts_p50": {key: round(statistics.median(v), 2) for key, v in parts.items()},
            "passages_per_search": round(sum(found) / max(len(found), 1), 2)}


def projection_points(corpora: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The measured points ``project`` fits, one per corpus (pure); ``search_p50_ms``: the part of
    a search spent in OpenSearch (the sub-queries and the fetch), which the corpus size drives."""
    return [{"docs": e["docs"], "disk_bytes": e["bytes_per_doc"] * e["docs"],
             "vector_bytes": e["files"]["vector_bytes"],
             "heap_used_mb": e["node_after_queries"]["heap_used_mb"],
             "latency_p50_ms": e["latency_ms"]["p50"],
             "search_p50_ms": round(e["latency_ms"]["parts_p50"]["search_ms"]
                                    + e["latency_ms"]["parts_p50"]["fetch_ms"], 2)} for e in corpora.values()]


def bench_evidence(services: Any, claims: Sequence[dict[str, Any]], *, sizes: Sequence[int],
                   n_queries: int, target: int, drop: bool = False,
                   log: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Measure the real pool and a synthetic corpus per ``sizes``, project to ``target``
    passages; with ``drop``, the synthetic corpora are deleted afterwards (built or reused)."""
    from plugin.lab.verification import build_pool

    store, embedder, settings = services.store, services.embedder, services.settings
    alias, pool = build_pool(services, claims)
    queries = [claim_query(c) for c in claims[:n_queries]]
    base = EvidenceRetriever(store, embedder, settings, alias=alias)
    for q in queries[:10]:  # warm-up: model session, OpenSearch caches
        base.search(q)
    out: dict[str, Any] = {"base": {"alias": alias, "pool": "gold-answers", **pool},
                           "embedding_model": embedder.name, "k": K, "corpora": {}}
    corpora: list[tuple[str, str, dict[str, Any] | None]] = [(f"{store.count(alias)} real", alias, None)]
    try:
        for n in sizes:
            log(f"building {n} synthetic passages")
            scaled, stats = build_scaled_index(store, embedder, alias, n, settings, template="evidence",
                                               make=synthetic_passages)
            corpora.append((f"{n} synthetic near-duplicates", scaled, stats))
        sample = embedder.encode_queries([q.text for q in queries[:RECALL_SAMPLE]])
        for label, idx, stats in corpora:
            log(f"measuring {idx}")
            entry: dict[str, Any] = {"index": idx, **index_stats(store, idx), "files": index_files(store, idx),
                                     "knn_recall": knn_recall(store, idx, sample)}
            if stats:
                entry["build"] = stats
            retriever = EvidenceRetriever(store, embedder, settings, alias=idx)
            search_latency(retriever, queries[:10])  # warm-up of this index
            entry["latency_ms"] = search_latency(retriever, queries)
            entry["node_after_queries"] = node_memory(store)
            out["corpora"][label] = entry
    finally:
        if drop:  # every synthetic corpus of this run, built, reused or left half-built by an error
            out["dropped"] = [scaled_alias(alias, n) for n in sizes]
            for scaled in out["dropped"]:
                drop_index(store, scaled)
    points = projection_points(out["corpora"])
    if len({p["docs"] for p in points}) >= 2:
        out["projection"] = {**project(points, target),
                             "vector_floor": vector_memory(target, embedder.dim, hnsw_m()),
                             "note": "a projection, not a measurement: fitted on the corpora above"}
    return out
