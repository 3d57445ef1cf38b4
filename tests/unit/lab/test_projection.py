"""Projecting an index's costs from measured sizes: least squares, the two latency shapes, and
the vector page-cache floor (table tests)."""
from __future__ import annotations

import math

import pytest

from plugin.lab.projection import fit_line, project, vector_memory


@pytest.mark.parametrize("xs, ys, intercept, slope", [
    ([1, 2, 3], [2, 4, 6], 0.0, 2.0),
    ([0, 10], [5, 5], 5.0, 0.0),
    ([1000, 10000, 100000], [1e6 + 3000 * 1000, 1e6 + 3000 * 10000, 1e6 + 3000 * 100000], 1e6, 3000.0),
    ([1, 2, 3, 4], [1, 3, 2, 4], 0.5, 0.8),  # noisy: the least-squares line
])
def test_fit_line_is_least_squares(xs, ys, intercept, slope):
    a, b = fit_line(xs, ys)
    assert a == pytest.approx(intercept) and b == pytest.approx(slope)


@pytest.mark.parametrize("xs, ys", [([1], [1]), ([1, 2], [1]), ([5, 5, 5], [1, 2, 3])])
def test_fit_line_needs_two_distinct_sizes(xs, ys):
    with pytest.raises(ValueError):
        fit_line(xs, ys)


POINTS = [  # disk: 1 MB + 4,000 B/doc; vectors 3,000 B/doc; latency: 20 ms + 5 ms per decade
    {"docs": 1000, "disk_bytes": 1e6 + 4e6, "vector_bytes": 3e6, "heap_used_mb": 400,
     "latency_p50_ms": 35.0},
    {"docs": 10000, "disk_bytes": 1e6 + 4e7, "vector_bytes": 3e7, "heap_used_mb": 400,
     "latency_p50_ms": 40.0},
    {"docs": 100000, "disk_bytes": 1e6 + 4e8, "vector_bytes": 3e8, "heap_used_mb": 400,
     "latency_p50_ms": 45.0},
]


def test_projection_to_ten_million_from_three_sizes():
    got = project(list(reversed(POINTS)), 10_000_000)
    assert got["projection"] is True and got["target_docs"] == 10_000_000
    assert got["from_docs"] == [1000, 10000, 100000]  # sorted, and named
    assert got["disk_bytes"]["per_doc"] == pytest.approx(4000) and got["disk_bytes"]["intercept"] == pytest.approx(1e6)
    assert got["disk_bytes"]["at_target"] == pytest.approx(1e6 + 4e10)
    assert got["disk_gib_at_target"] == round((1e6 + 4e10) / 2**30, 2)
    assert got["vector_bytes"]["per_doc"] == pytest.approx(3000) and got["vector_gib_at_target"] == 27.94
    assert got["heap_used_mb"]["per_doc"] == 0 and got["heap_used_mb"]["at_target"] == 400
    log = got["latency_p50_ms"]["log_linear"]
    assert log["ms_per_decade"] == pytest.approx(5) and log["at_target_ms"] == pytest.approx(55.0)
    linear = got["latency_p50_ms"]["linear"]  # the pessimistic bound is far above the log fit
    power = got["latency_p50_ms"]["power_law"]  # and the power law between the two
    assert log["at_target_ms"] < power["at_target_ms"] < linear["at_target_ms"]
    assert "search_p50_ms" not in got  # not measured


@pytest.mark.parametrize("ys, alpha, at_target", [
    ([10.0, 20.0, 40.0], math.log10(2), 160.0),  # doubling per decade
    ([5.0, 5.0, 5.0], 0.0, 5.0),  # flat
])
def test_the_power_law_is_a_line_in_log_log_space(ys, alpha, at_target):
    points = [{"docs": d, "search_p50_ms": y} for d, y in zip([1000, 10000, 100000], ys)]
    got = project(points, 10_000_000)["search_p50_ms"]["power_law"]
    assert got["alpha"] == pytest.approx(alpha, abs=1e-4) and got["at_target_ms"] == pytest.approx(at_target)


def test_no_power_law_through_a_zero_latency():
    got = project([{"docs": 10, "search_p50_ms": 0.0}, {"docs": 100, "search_p50_ms": 1.0}], 1000)
    assert "power_law" not in got["search_p50_ms"] and "log_linear" in got["search_p50_ms"]


@pytest.mark.parametrize("drop, kept", [
    ("latency_p50_ms", {"disk_bytes", "vector_bytes", "heap_used_mb"}),
    ("heap_used_mb", {"disk_bytes", "vector_bytes", "latency_p50_ms"}),
])
def test_a_quantity_measured_at_one_size_only_is_left_out(drop, kept):
    points = [dict(POINTS[0]), {k: v for k, v in POINTS[1].items() if k != drop}]
    points[0].pop(drop)
    got = project(points, 10**7)
    assert kept <= set(got) and drop not in got


@pytest.mark.parametrize("points, target", [([POINTS[0]], 10**7), ([POINTS[0], dict(POINTS[0])], 10**7),
                                            (POINTS, 0)])
def test_projection_refuses_what_it_cannot_fit(points, target):
    with pytest.raises(ValueError):
        project(points, target)


@pytest.mark.parametrize("docs, dim, m, raw, graph", [
    (10_000_000, 384, 16, 10_000_000 * 384 * 4, 10_000_000 * 32 * 4),
    (1, 768, 8, 3072, 64),
])
def test_vector_memory_is_raw_vectors_plus_the_level_zero_graph(docs, dim, m, raw, graph):
    got = vector_memory(docs, dim, m)
    assert got["raw_vector_bytes"] == raw and got["graph_bytes"] == graph
    assert got["gib"] == round((raw + graph) / 2**30, 2)
    assert not math.isnan(got["gib"])
