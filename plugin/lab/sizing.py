"""Sizing a deployment on paper: fact-checks, evidence passages and posts a day → OpenSearch nodes,
heap, disk, page cache for the vectors, Celery worker processes and API workers (pure).

The inputs are counts and per-document costs; the costs are measured (``factsieve bench``,
``scripts/api_checks.py posts|load``) and written down in ``docs/operating/sizing.md``, never
here. The formulae are the guide's; this module is the one place they are computed.

Vectors: FactSieve's indexes use the Lucene HNSW engine, which keeps vectors and graph in index
files read through the operating system's page cache (off the JVM heap). Their size follows the
OpenSearch k-NN memory estimate, ``1.1 * (4 * dimension + 8 * m)`` bytes a vector for float32
and ``1.1 * (dimension + 8 * m)`` with 7-bit scalar quantization (``sq``); a replica doubles it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

GIB = 2**30


def vector_bytes(dimension: int, m: int, quantized: bool = False) -> float:
    """Page-cache bytes one vector needs: the OpenSearch k-NN estimate for HNSW (1.1 × (bytes of
    the vector + 8·m bytes of graph links)); ``quantized``: 1 byte a dimension (Lucene ``sq``)."""
    return 1.1 * ((1 if quantized else 4) * dimension + 8 * m)


@dataclass(frozen=True)
class Costs:
    """Measured costs of one document in one index, primaries only (see the sizing guide)."""
    disk_bytes: float         # size on disk / documents, after the merge
    heap_bytes: float = 0.0   # heap growth a document (terms, doc values held on heap)
    dimension: int = 384
    m: int = 16
    quantized: bool = False


@dataclass(frozen=True)
class Load:
    factchecks: int
    passages: int = 0
    posts_per_day: float = 0.0
    peak_factor: float = 4.0         # the busiest hour's rate over the day's average
    matches_per_s: float = 0.0       # synchronous /v1/match calls at the peak
    replicas: int = 1


@dataclass(frozen=True)
class Node:
    """One OpenSearch data node's shape."""
    ram_gib: float
    disk_gib: float
    heap_gib: float | None = None    # default: half the RAM, at most 31 GiB
    os_gib: float = 1.0              # the operating system and other processes
    base_heap_gib: float = 0.5       # the heap a node holds before FactSieve's documents
    disk_fill: float = 0.75          # leave room under the disk watermarks (85 % low by default)
    merge_headroom: float = 2.0      # a force merge rewrites a shard: room for a second copy

    @property
    def heap(self) -> float:
        return self.heap_gib if self.heap_gib is not None else min(31.0, self.ram_gib / 2)

    @property
    def page_cache_gib(self) -> float:
        return max(0.0, self.ram_gib - self.heap - self.os_gib)


@dataclass(frozen=True)
class Rates:
    """Measured rates, per process (the sizing guide gives them)."""
    worker_posts_per_s: float        # one Celery worker process, posts through the queue
    api_worker_requests_per_s: float = 0.0  # one gunicorn worker, /v1/match


def requirements(load: Load, factchecks: Costs, passages: Costs) -> dict[str, float]:
    """Totals over the cluster, replicas included (GiB): disk, page cache for the vectors, heap
    for the documents (on top of each node's base heap)."""
    copies = 1 + load.replicas
    docs = ((load.factchecks, factchecks), (load.passages, passages))
    return {"disk_gib": sum(n * c.disk_bytes for n, c in docs) * copies / GIB,
            "vector_cache_gib": sum(n * vector_bytes(c.dimension, c.m, c.quantized) for n, c in docs)
            * copies / GIB,
            "doc_heap_gib": sum(n * c.heap_bytes for n, c in docs) * copies / GIB}


def nodes_needed(need: dict[str, float], node: Node, replicas: int) -> dict[str, int]:
    """Data nodes each resource asks for, and ``nodes``, the most of them: disk (with merge
    headroom, under the fill limit), page cache for every vector, heap for the documents; at
    least one node a copy, so every replica has a node of its own."""
    by = {"for_disk": math.ceil(need["disk_gib"] * node.merge_headroom / (node.disk_gib * node.disk_fill)),
          "for_vectors": math.ceil(need["vector_cache_gib"] / node.page_cache_gib) if node.page_cache_gib
          else 10**9,
          "for_heap": math.ceil(need["doc_heap_gib"] / max(1e-9, node.heap - node.base_heap_gib)),
          "for_replicas": 1 + replicas}
    return {**by, "nodes": max(by.values())}


def processes(load: Load, rates: Rates) -> dict[str, float]:
    """Celery worker processes for the peak post rate, and API workers for the peak match rate."""
    peak = load.posts_per_day / 86_400 * load.peak_factor
    out: dict[str, float] = {"peak_posts_per_s": round(peak, 3),
                             "celery_workers": max(1, math.ceil(peak / rates.worker_posts_per_s))}
    if rates.api_worker_requests_per_s:
        out["api_workers"] = max(2, math.ceil(load.matches_per_s / rates.api_worker_requests_per_s))
    return out


def plan(load: Load, factchecks: Costs, passages: Costs, node: Node, rates: Rates) -> dict[str, object]:
    """The whole sizing: requirements, nodes, and processes, as one dict (GiB rounded to 0.1)."""
    need = requirements(load, factchecks, passages)
    return {"requirements_gib": {k: round(v, 1) for k, v in need.items()},
            "node": {"ram_gib": node.ram_gib, "heap_gib": node.heap, "page_cache_gib": node.page_cache_gib,
                     "disk_gib": node.disk_gib},
            **nodes_needed(need, node, load.replicas), **processes(load, rates)}
