"""Projecting an index's cost to a size nobody measured, from sizes that were (pure).

Given measured points (documents → bytes on disk, heap, vector bytes, search latency p50) this
fits:

- **disk** and **vector files** as ``a + b · docs`` (least squares on the totals): ``b`` is the
  marginal bytes a document costs, ``a`` what the index costs empty (segment metadata, the
  dictionary of a small corpus); the projection is ``a + b · target``;
- **heap** the same way (the node's heap in use: noisy, since garbage collection runs when it
  runs; a slope near zero says the index lives off-heap);
- **latency** (the whole search, and the part OpenSearch spends) three ways, because none is known
  to hold: ``a + b · log10(docs)`` (the growth of an HNSW graph search: the optimistic shape),
  ``c · docs^α`` (a power law, fitted in log–log space: the middle) and ``a + b · docs`` (postings
  scanned in full: the pessimistic bound). Extrapolating two or three points by a factor of 100
  is a guess with a shape; the output says from which points.

``vector_memory`` is arithmetic, not a fit: raw float32 vectors plus an HNSW level-0 graph of
``2·m`` neighbour ids each, the floor of what the page cache holds for vector search to stay off
the disk.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

#: The fields a measured point may carry, and the fit each gets.
LINEAR = ("disk_bytes", "vector_bytes", "heap_used_mb")
LATENCY = ("latency_p50_ms", "search_p50_ms")


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Least-squares ``(intercept, slope)`` of ``ys`` on ``xs``; needs two distinct ``xs``."""
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError("a fit needs at least two points, as many xs as ys")
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("a fit needs at least two distinct sizes")
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - slope * mx, slope


def _linear(points: Sequence[Mapping[str, Any]], key: str, target: int) -> dict[str, Any] | None:
    got = [(float(p["docs"]), float(p[key])) for p in points if p.get(key) is not None]
    if len({x for x, _ in got}) < 2:
        return None
    a, b = fit_line([x for x, _ in got], [y for _, y in got])
    return {"intercept": round(a, 3), "per_doc": round(b, 6), "at_target": round(a + b * target, 1)}


def _latency(points: Sequence[Mapping[str, Any]], key: str, target: int) -> dict[str, Any] | None:
    got = [(float(p["docs"]), float(p[key])) for p in points if p.get(key) is not None]
    if len({x for x, _ in got}) < 2:
        return None
    xs, ys = [x for x, _ in got], [y for _, y in got]
    a, b = fit_line([math.log10(x) for x in xs], ys)
    out: dict[str, Any] = {"log_linear": {"intercept_ms": round(a, 3), "ms_per_decade": round(b, 3),
                                          "at_target_ms": round(a + b * math.log10(target), 1)}}
    if min(ys) > 0:
        c, alpha = fit_line([math.log10(x) for x in xs], [math.log10(y) for y in ys])
        out["power_law"] = {"alpha": round(alpha, 4), "at_target_ms": round(10 ** c * target ** alpha, 1)}
    la, lb = fit_line(xs, ys)
    out["linear"] = {"intercept_ms": round(la, 3), "ms_per_million_docs": round(lb * 1e6, 3),
                     "at_target_ms": round(la + lb * target, 1)}
    return out


def project(points: Sequence[Mapping[str, Any]], target: int) -> dict[str, Any]:
    """Each measured quantity of ``points`` (``docs`` plus any of ``LINEAR`` and of ``LATENCY``,
    in ms) fitted and projected to ``target`` documents; a quantity measured at fewer than two
    sizes is left out. The result names the points it came from."""
    if target < 1:
        raise ValueError("the target must be at least one document")
    points = sorted(points, key=lambda p: p["docs"])
    if len({p["docs"] for p in points}) < 2:
        raise ValueError("a projection needs points at two sizes at least")
    out: dict[str, Any] = {"projection": True, "target_docs": target,
                           "from_docs": [p["docs"] for p in points]}
    for key in LINEAR:
        fit = _linear(points, key, target)
        if fit is not None:
            out[key] = fit
    for key in LATENCY:
        fit = _latency(points, key, target)
        if fit is not None:
            out[key] = fit
    if "disk_bytes" in out:
        out["disk_gib_at_target"] = round(out["disk_bytes"]["at_target"] / 2**30, 2)
    if "vector_bytes" in out:
        out["vector_gib_at_target"] = round(out["vector_bytes"]["at_target"] / 2**30, 2)
    return out


def vector_memory(docs: int, dimension: int, m: int, *, bytes_per_value: int = 4) -> dict[str, Any]:
    """Bytes of ``docs`` raw vectors of ``dimension`` values and of an HNSW level-0 graph of
    ``2·m`` neighbours (4-byte ids) each: the page cache floor for vector search."""
    raw = docs * dimension * bytes_per_value
    graph = docs * 2 * m * 4
    return {"docs": docs, "raw_vector_bytes": raw, "graph_bytes": graph,
            "gib": round((raw + graph) / 2**30, 2)}
