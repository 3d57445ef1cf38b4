"""What an index costs and how exact its vector search is, for ``factsieve bench``.

- ``index_stats``: documents, segments, size on disk (primaries), and ``node_memory``: the
  node's heap (the JVM's own figures) and resident set (from ``/proc`` when the node runs on
  this machine, else ``None``).
- ``index_files``: bytes on disk by Lucene file kind (``vec``: the raw vectors, ``vex``: the
  HNSW graph, ``dvd``: doc values, ``tim``/``doc``/``pos``: postings, ``fdt``: stored fields),
  and the heap the index's segments hold (Lucene 9 keeps terms index and doc values off-heap).
- ``drop_index``: deletes a benchmark's own alias, its versions and its index template.
- ``knn_recall``: recall@k of the approximate kNN stage (HNSW on the Lucene engine, with the
  ``ef_search`` the live path uses) against exact nearest neighbours (a brute-force
  ``script_score`` over every document) for a sample of query vectors.

Query bodies are small pure functions; the store runs them.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from plugin.index.store import Store
from plugin.search.queries import knn_query, read_candidates


def exact_knn_body(vector: Sequence[float], size: int, field: str = "embedding") -> dict[str, Any]:
    """The exact ``size`` nearest by cosine: every document scored (pure)."""
    return {"size": size, "_source": False, "track_total_hits": False,
            "query": {"script_score": {"query": {"match_all": {}}, "script": {
                "source": "knn_score", "lang": "knn",
                "params": {"field": field, "query_value": [float(x) for x in vector],
                           "space_type": "cosinesimil"}}}}}


def recall_at(approx: Sequence[str], exact: Sequence[str], k: int) -> float:
    """The share of the exact top ``k`` the approximate top ``k`` found (pure)."""
    truth = set(exact[:k])
    return len(truth & set(approx[:k])) / len(truth) if truth else 1.0


def knn_recall(store: Store, index: str, vectors: Sequence[Sequence[float]], *, k: int = 10,
               ef_search: int | None = None) -> dict[str, Any]:
    """Mean recall@``k`` of the approximate kNN against exact search over ``vectors``, and what
    each costs per query (ms, p50 of the sample)."""
    recalls, t_approx, t_exact = [], [], []
    for v in vectors:
        t0 = time.perf_counter()
        approx = [h.id for h in read_candidates(store.search(index, knn_query(
            v, filters=None, size=k, ef_search=ef_search)), "knn")]
        t1 = time.perf_counter()
        exact = [h.id for h in read_candidates(store.search(index, exact_knn_body(v, k)), "exact")]
        t2 = time.perf_counter()
        recalls.append(recall_at(approx, exact, k))
        t_approx.append((t1 - t0) * 1e3)
        t_exact.append((t2 - t1) * 1e3)
    return {"queries": len(recalls), "k": k, "recall": round(sum(recalls) / max(len(recalls), 1), 4),
            "min_recall": round(min(recalls), 4) if recalls else None,
            "approx_ms_p50": round(sorted(t_approx)[len(t_approx) // 2], 1) if t_approx else None,
            "exact_ms_p50": round(sorted(t_exact)[len(t_exact) // 2], 1) if t_exact else None}


def index_stats(store: Store, index: str) -> dict[str, Any]:
    """Documents, segments and bytes on disk of ``index`` (primaries), and the node's memory."""
    stats = store.client.indices.stats(index=index, metric="docs,store")
    primaries = stats["_all"]["primaries"]
    return {"docs": primaries["docs"]["count"], "segments": store.segment_count(index),
            "size_on_disk_mb": round(primaries["store"]["size_in_bytes"] / 2**20, 1),
            "bytes_per_doc": round(primaries["store"]["size_in_bytes"] / max(primaries["docs"]["count"], 1)),
            "node": node_memory(store)}


def node_memory(store: Store) -> dict[str, Any]:
    """The (first) node's JVM heap in use and its maximum, and its resident set (MB)."""
    node = next(iter(store.client.nodes.stats(metric="jvm")["nodes"].values()))
    info = next(iter(store.client.nodes.info(metric="process")["nodes"].values()))
    return {"heap_used_mb": round(node["jvm"]["mem"]["heap_used_in_bytes"] / 2**20, 1),
            "heap_max_mb": round(node["jvm"]["mem"]["heap_max_in_bytes"] / 2**20, 1),
            "rss_mb": _rss_mb(info.get("process", {}).get("id"))}


def _rss_mb(pid: Any) -> float | None:
    """The resident set of process ``pid`` on this machine (``None`` when it is not here)."""
    try:
        for line in Path(f"/proc/{int(pid)}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, TypeError, ValueError):
        return None
    return None


#: Lucene files that an approximate kNN search reads (raw vectors, HNSW graph and their metadata):
#: what must stay in the page cache for vector search not to read the disk.
VECTOR_FILES = ("vec", "vex", "vem", "vemf")


def index_files(store: Store, index: str) -> dict[str, Any]:
    """Bytes on disk of ``index``'s primaries by Lucene file extension, the vector files' total
    (``VECTOR_FILES``), and the heap its segments hold."""
    stats = store.client.indices.stats(index=index, metric="segments", include_segment_file_sizes=True)
    seg = stats["_all"]["primaries"]["segments"]
    files = {ext: body["size_in_bytes"] for ext, body in sorted((seg.get("file_sizes") or {}).items())}
    return {"file_bytes": files, "vector_bytes": sum(files.get(ext, 0) for ext in VECTOR_FILES),
            "segments_heap_bytes": seg.get("memory_in_bytes", 0)}


def drop_index(store: Store, alias: str) -> None:
    """Delete a benchmark's synthetic ``alias``: its versions (``<alias>-v*``) and its index
    template (``factsieve-<alias>``). Only for indexes the benchmark made itself."""
    store.delete_index(f"{alias}-v*")
    store.delete_index_template(f"factsieve-{alias}")
