"""Sizing on paper (plugin.lab.sizing): hand-checkable formulae."""
import pytest

from plugin.lab.sizing import GIB, Costs, Load, Node, Rates, nodes_needed, plan, processes, requirements, vector_bytes


@pytest.mark.parametrize("dim, m, quantized, expected", [
    (256, 16, False, 1.1 * (1024 + 128)),   # the OpenSearch docs' example: ~1.267 GB for 1M vectors
    (384, 16, False, 1.1 * (1536 + 128)),   # FactSieve's e5-small vectors, m 16: 1,830.4 B
    (384, 16, True, 1.1 * (384 + 128)),     # 7-bit sq: one byte a dimension
])
def test_vector_bytes_follow_the_knn_estimate(dim, m, quantized, expected):
    assert vector_bytes(dim, m, quantized) == pytest.approx(expected)


def test_the_docs_example_is_1_267_gb_a_million():
    assert vector_bytes(256, 16) * 1_000_000 / 1e9 == pytest.approx(1.267, abs=0.001)


def test_requirements_count_every_copy():
    fc, ev = Costs(disk_bytes=1000, heap_bytes=10), Costs(disk_bytes=500, heap_bytes=0, quantized=True)
    need = requirements(Load(factchecks=GIB // 1000, passages=2 * GIB // 500, replicas=1), fc, ev)
    # fact-checks 1 GiB + passages 2 GiB, twice (one replica)
    assert need["disk_gib"] == pytest.approx(6.0, rel=1e-3)
    assert need["doc_heap_gib"] == pytest.approx(2 * (GIB // 1000) * 10 / GIB)
    vectors = (GIB // 1000) * vector_bytes(384, 16) + (2 * GIB // 500) * vector_bytes(384, 16, True)
    assert need["vector_cache_gib"] == pytest.approx(2 * vectors / GIB)


def test_node_heap_is_half_the_ram_at_most_31():
    assert Node(ram_gib=16, disk_gib=100).heap == 8
    assert Node(ram_gib=128, disk_gib=100).heap == 31
    assert Node(ram_gib=16, disk_gib=100, heap_gib=4).page_cache_gib == 11


@pytest.mark.parametrize("need, expected", [
    # disk: 30 GiB × 2 (merge) / (100 × 0.75) = 0.8 → 1; vectors 20 / 7 → 3; heap 1 / 7.5 → 1; 2 copies
    ({"disk_gib": 30, "vector_cache_gib": 20, "doc_heap_gib": 1},
     {"for_disk": 1, "for_vectors": 3, "for_heap": 1, "for_replicas": 2, "nodes": 3}),
    # disk rules: 150 × 2 / 75 = 4
    ({"disk_gib": 150, "vector_cache_gib": 1, "doc_heap_gib": 1},
     {"for_disk": 4, "for_vectors": 1, "for_heap": 1, "for_replicas": 2, "nodes": 4}),
    # small: the replica alone asks for a second node
    ({"disk_gib": 1, "vector_cache_gib": 1, "doc_heap_gib": 0},
     {"for_disk": 1, "for_vectors": 1, "for_heap": 0, "for_replicas": 2, "nodes": 2}),
])
def test_nodes_are_the_most_any_resource_asks_for(need, expected):
    assert nodes_needed(need, Node(ram_gib=16, disk_gib=100), replicas=1) == expected


def test_processes_for_the_peak():
    load = Load(factchecks=0, posts_per_day=86_400, peak_factor=4, matches_per_s=50)
    # 1 post/s on average, 4 at the peak; 1.5 posts/s a worker → 3; 50 matches/s at 20 a worker → 3
    assert processes(load, Rates(worker_posts_per_s=1.5, api_worker_requests_per_s=20)) == {
        "peak_posts_per_s": 4.0, "celery_workers": 3, "api_workers": 3}
    assert processes(Load(factchecks=0), Rates(worker_posts_per_s=1.0)) == {"peak_posts_per_s": 0.0,
                                                                         "celery_workers": 1}


def test_plan_puts_it_together():
    got = plan(Load(factchecks=1_000_000, passages=0, posts_per_day=100_000, replicas=1),
               Costs(disk_bytes=5_695), Costs(disk_bytes=0), Node(ram_gib=16, disk_gib=200),
               Rates(worker_posts_per_s=2.0))
    assert got["requirements_gib"]["disk_gib"] == round(2 * 5_695e6 / GIB, 1)
    assert got["nodes"] == 2 and got["celery_workers"] == 3  # 100k/day × 4 = 4.6 posts/s at the peak
