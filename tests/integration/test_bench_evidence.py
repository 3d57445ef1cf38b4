"""`factsieve bench-evidence` end to end on the real OpenSearch: the AVeriTeC fixture's pool as
the real corpus, one tiny synthetic corpus, every figure present, and nothing of its own left."""
from __future__ import annotations

import json

import pytest

from cli.main import main
from tests.conftest import FIXTURES

pytestmark = pytest.mark.integration

CLAIMS = FIXTURES / "averitec"


def test_bench_evidence_measures_projects_and_cleans_up(capsys, store, embedder):
    from plugin.lab.bench import scaled_alias
    from plugin.lab.bench_index import drop_index
    from plugin.lab.verification import pool_alias
    from plugin.verify.averitec import read_claims

    pool = pool_alias(read_claims(CLAIMS), embedder.name)
    pool_existed = bool(store.alias_indices(pool))
    scaled = scaled_alias(pool, 300)
    try:
        code = main(["bench-evidence", "--dataset", str(CLAIMS), "--docs", "300", "--queries", "5",
                     "--project", "10000000", "--drop"])
        out, _ = capsys.readouterr()
        assert code == 0
        result = json.loads(out)
        real, syn = result["corpora"].values()
        assert real["index"] == pool and syn["index"] == scaled and syn["docs"] == 300
        assert syn["build"]["synthetic"] is True and syn["build"]["failed"] == 0
        assert syn["build"]["segments_before_merge"] >= 2  # loaded in two halves: the merge rewrites them
        for c in (real, syn):
            assert c["segments"] >= 1 and c["bytes_per_doc"] > 0 and c["node"]["heap_used_mb"] > 0
            assert c["files"]["vector_bytes"] > 0 and c["files"]["file_bytes"]["vec"] > 0
            assert c["knn_recall"]["queries"] == 5 and 0.9 <= c["knn_recall"]["recall"] <= 1.0
            latency = c["latency_ms"]
            assert latency["queries"] == 5 and latency["p95"] >= latency["p50"] > 0
            assert set(latency["parts_p50"]) == {"embed_ms", "search_ms", "fetch_ms"}
            assert latency["passages_per_search"] > 0
        projection = result["projection"]
        assert projection["projection"] is True and projection["target_docs"] == 10_000_000
        assert sorted(projection["from_docs"]) == projection["from_docs"] and 300 in projection["from_docs"]
        assert "log_linear" in projection["latency_p50_ms"] and projection["vector_floor"]["gib"] > 0
        # --drop: the synthetic corpus and its template are gone; the real pool stays
        assert result["dropped"] == [scaled]
        assert store.alias_indices(scaled) == [] and not store.indices_matching(f"{scaled}-v*")
        assert not store.client.indices.exists_index_template(name=f"factsieve-{scaled}")
        assert store.alias_indices(pool)
    finally:
        drop_index(store, scaled)
        if not pool_existed:
            drop_index(store, pool)
