"""The evidence bench's pure parts: synthetic passages, the verifier's search for a claim, and
the points a projection fits."""
from __future__ import annotations

from datetime import date

import numpy as np

from plugin.evidence.retrieve import CANDIDATE_FIELDS, PASSAGE_FIELDS
from plugin.lab.bench_evidence import K, claim_query, hnsw_m, projection_points, synthetic_passages

BASE = [
    {"id": "p0", "doc_id": "d0", "url": "https://a.example/x", "url_key": "a.example/x", "domain": "a.example",
     "domains": ["a.example", "example"], "title": "A page", "title_i18n": {"en": "A page"},
     "text": "one two three four five six", "text_i18n": {"en": "one two three four five six"},
     "position": 0, "published_at": "2020-01-02", "lang": "en", "source": "gold-answers",
     "claim_id": "dev-1", "owner": "default", "embedding": [1.0, 0.0, 0.0]},
    {"id": "p1", "doc_id": "d1", "url": "https://b.example/y", "url_key": "b.example/y", "domain": "b.example",
     "domains": ["b.example", "example"], "text": "short text", "position": 3, "lang": "de",
     "source": "gold-answers", "embedding": [0.0, 1.0, 0.0]},
]


def test_synthetic_passages_keep_every_field_the_search_reads():
    docs = list(synthetic_passages(BASE, 5))
    assert [d["id"] for d in docs] == [f"syn-{j}" for j in range(5)]
    read = set(CANDIDATE_FIELDS) | set(PASSAGE_FIELDS) | {"domains", "text_i18n", "title_i18n"}
    for d, src in zip(docs, BASE * 3):
        assert {k for k in src if k in read} <= set(d), "a field the search reads was lost"
        assert d["source"] == "synthetic" and d["published_at" if "published_at" in src else "lang"]
        assert d["position"] == src["position"] and d.get("claim_id") == src.get("claim_id")
        assert d["domains"] == src["domains"]
        assert abs(np.linalg.norm(d["embedding"]) - 1.0) < 1e-5  # noisy, re-normalised
        assert np.dot(d["embedding"], src["embedding"]) > 0.9  # still a near duplicate


def test_synthetic_passages_perturb_the_text_and_its_analysed_copy():
    first = next(synthetic_passages(BASE, 1))
    assert first["text"] != BASE[0]["text"] and sorted(first["text"].split()) != sorted(BASE[0]["text"].split())
    assert len(first["text"].split()) == len(BASE[0]["text"].split()) - 1
    assert first["text_i18n"] == {"en": first["text"]}
    assert "text_i18n" not in list(synthetic_passages(BASE, 2))[1]  # none to mirror


def test_each_cycle_is_another_page_so_the_per_page_rule_sees_many_pages():
    docs = list(synthetic_passages(BASE, 6))
    assert docs[0]["url_key"] == "a.example/x" and docs[0]["doc_id"] == "d0"  # the first cycle: the real pages
    assert docs[2]["url_key"] == "a.example/x/syn1" and docs[4]["url_key"] == "a.example/x/syn2"
    assert docs[2]["url"] == "https://a.example/x/syn1" and docs[3]["doc_id"] == "d1/syn1"
    assert docs[2]["domain"] == "a.example"  # the same site, another page
    assert len({d["url_key"] for d in docs}) == 6


def test_synthetic_passages_are_reproducible_by_seed():
    a = list(synthetic_passages(BASE, 4, seed=3))
    assert a == list(synthetic_passages(BASE, 4, seed=3))
    assert a != list(synthetic_passages(BASE, 4, seed=4))


def test_a_claim_is_searched_as_the_verifier_searches_it():
    q = claim_query({"id": "dev-0", "claim": "x" * 30000, "date": "2020-10-31",
                     "fact_checking_article": "https://checkyourfact.com/a"})
    assert q.before == date(2020, 10, 31) and q.exclude_urls == ("https://checkyourfact.com/a",)
    assert q.k == K == 10 and len(q.text) < 30000
    q = claim_query({"id": "dev-1", "claim": "y"}, k=3)
    assert q.before is None and q.exclude_urls == () and q.k == 3


def test_projection_points_come_from_each_corpus():
    corpora = {"a": {"docs": 100, "bytes_per_doc": 4000, "files": {"vector_bytes": 150000},
                     "node_after_queries": {"heap_used_mb": 300.0},
                     "latency_ms": {"p50": 30.0, "parts_p50": {"embed_ms": 8.0, "search_ms": 12.5,
                                                               "fetch_ms": 1.25}}}}
    assert projection_points(corpora) == [{"docs": 100, "disk_bytes": 400000, "vector_bytes": 150000,
                                           "heap_used_mb": 300.0, "latency_p50_ms": 30.0,
                                           "search_p50_ms": 13.75}]


def test_the_graph_degree_is_the_knn_component_s():
    from plugin.index.bodies import load_template

    knn = load_template("component/factsieve-knn")["template"]["mappings"]["properties"]["embedding"]
    assert hnsw_m() == knn["method"]["parameters"]["m"] > 1
