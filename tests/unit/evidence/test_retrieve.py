"""Evidence query bodies as (input, expected body) tables; fusion and per-document diversity."""
from datetime import date

import pytest

from plugin.errors import BadInput
from plugin.evidence.retrieve import (DEFAULT_CONFIG, UNDATED, EvidenceQuery, before_clause,
                                      bm25_body, evidence_filter, exclusion_clauses, knn_body,
                                      passage_fields, per_url, sources_body, vectors_by_id)
from plugin.models import Fused, Hit
from plugin.search.queries import KNN_EF_SEARCH, VECTOR_SCRIPT
from plugin.search.retrieval import RetrievalConfig

LEAN = {"stored_fields": "_none_", "track_total_hits": False,
        "docvalue_fields": ["id", "url_key", "position"]}
BEFORE = {"range": {"published_at": {"lt": "2020-10-31"}}}
FC = "https://web.archive.org/web/20201102/https://www.factcheckers.example/2020/10/30/claim/"


@pytest.mark.parametrize("query, expected", [
    (EvidenceQuery("x"), None),
    # strictly before the claim date; undated passages kept
    (EvidenceQuery("x", before=date(2020, 10, 31)),
     {"bool": {"filter": [{"bool": {"should": [BEFORE, UNDATED], "minimum_should_match": 1}}]}}),
    (EvidenceQuery("x", before=date(2020, 10, 31), strict_dates=True), {"bool": {"filter": [BEFORE]}}),
    (EvidenceQuery("x", exclude_urls=(FC, "http://factcheckers.example/2020/10/30/claim")),
     {"bool": {"must_not": [{"terms": {"url_key": ["factcheckers.example/2020/10/30/claim"]}}]}}),
    (EvidenceQuery("x", exclude_domains=("WWW.Snopes.com", "https://politifact.com/x")),
     {"bool": {"must_not": [{"terms": {"domains": ["politifact.com", "snopes.com"]}}]}}),
    (EvidenceQuery("x", claim_id="dev-0", exclude_domains=("snopes.com",)),
     {"bool": {"filter": [{"term": {"claim_id": "dev-0"}}],
               "must_not": [{"terms": {"domains": ["snopes.com"]}}]}}),
])
def test_evidence_filter(query, expected):
    assert evidence_filter(query) == expected


def test_before_clause_is_strictly_before():
    assert before_clause(date(2020, 1, 2), strict=True) == {"range": {"published_at": {"lt": "2020-01-02"}}}
    assert "lte" not in repr(before_clause(date(2020, 1, 2)))


def test_blank_exclusions_are_ignored():
    assert exclusion_clauses(["  "], [""]) == []
    assert evidence_filter(EvidenceQuery("x", exclude_urls=(" ",))) is None


@pytest.mark.parametrize("lang, expected", [
    ("en", ["text_i18n.en^2", "title_i18n.en", "text^2", "title"]),
    ("xx", ["text^2", "title"]),
    (None, ["text^2", "title"]),
])
def test_passage_fields(lang, expected):
    assert passage_fields(lang) == expected


FILTER = evidence_filter(EvidenceQuery("x", before=date(2020, 10, 31), exclude_urls=(FC,),
                                       exclude_domains=("snopes.com",)))


def test_bm25_body_carries_the_filter():
    assert bm25_body("scooter ban", lang="en", filters=FILTER, size=50) == {
        "size": 50, **LEAN, "track_total_hits": True,  # BM25 counts every hit (queries.BM25_TRACK_TOTAL_HITS)
        "query": {"bool": {
            "must": [{"multi_match": {"query": "scooter ban", "type": "most_fields",
                                      "fields": ["text_i18n.en^2", "title_i18n.en", "text^2", "title"]}}],
            "filter": [FILTER]}}}


def test_knn_body_carries_the_same_filter_inside_the_graph_search():
    body = knn_body([0.5, 0.25], filters=FILTER, size=50)
    assert body == {"size": 50, **LEAN, "query": {"knn": {"embedding": {
        "vector": [0.5, 0.25], "k": 50, "method_parameters": {"ef_search": KNN_EF_SEARCH}, "filter": FILTER}}}}


def test_both_bodies_exclude_and_date_filter_identically():
    bm25 = bm25_body("t", lang=None, filters=FILTER, size=5)["query"]["bool"]["filter"][0]
    knn = knn_body([1.0], filters=FILTER, size=5)["query"]["knn"]["embedding"]["filter"]
    assert bm25 == knn == FILTER
    assert FILTER["bool"]["must_not"] == [
        {"terms": {"url_key": ["factcheckers.example/2020/10/30/claim"]}},
        {"terms": {"domains": ["snopes.com"]}}]


def test_bodies_without_filters():
    assert "filter" not in bm25_body("t", lang=None, filters=None, size=5)["query"]["bool"]
    assert "filter" not in knn_body([1.0], filters=None, size=5)["query"]["knn"]["embedding"]


def test_sources_body():
    assert sources_body(["a", "b"])["query"] == {"terms": {"id": ["a", "b"]}}
    assert "text" in sources_body(["a"])["_source"] and "embedding" not in sources_body(["a"])["_source"]
    assert "script_fields" not in sources_body(["a"])
    with_vectors = sources_body(["a"], vectors=True)  # the vector is not in _source: a script field
    assert with_vectors["script_fields"] == {"embedding": VECTOR_SCRIPT}
    assert with_vectors["_source"] == sources_body(["a"])["_source"]


def test_vectors_by_id_reads_the_script_field():
    hits = [{"_id": "x", "_source": {"id": "a"}, "fields": {"embedding": [0.1, 0.2]}},
            {"_id": "b", "_source": {"id": "b"}}]
    assert vectors_by_id({"hits": {"hits": hits}}) == {"a": [0.1, 0.2]}


def fused(rows):
    """Fused hits from ``(id, url_key, position)`` rows, in rank order."""
    return [Fused(id=i, score=1.0 / r, rank=r, contributions={"q": Hit(
                id=i, score=1.0, rank=r, query="q",
                source={"url_key": u, "position": pos} if u else None)})
            for r, (i, u, pos) in enumerate(rows, start=1)]


ROWS = [("a1", "a.example/x", 0), ("a2", "a.example/x", 1), ("a3", "a.example/x", 2),
        ("b1", "b.example/y", 0), ("c1", "c.example", 0), ("b2", "b.example/y", 1)]


@pytest.mark.parametrize("max_per_url, k, expected", [
    (1, 5, ["a1", "b1", "c1"]),
    (2, 5, ["a1", "a2", "b1", "c1", "b2"]),
    (2, 3, ["a1", "a2", "b1"]),
])
def test_per_url_keeps_at_most_n_passages_of_a_page(max_per_url, k, expected):
    got = per_url(fused(ROWS), max_per_url, k)
    assert [f.id for f in got] == expected
    assert [f.rank for f in got] == list(range(1, len(expected) + 1))


def test_per_url_skips_the_same_passage_from_another_claims_store():
    rows = [("a1", "a.example/x", 0), ("a1-claim2", "a.example/x", 0), ("a2", "a.example/x", 1)]
    assert [f.id for f in per_url(fused(rows), 2, 5)] == ["a1", "a2"]


def test_per_url_counts_a_passage_without_url_key_as_its_own_page():
    assert [f.id for f in per_url(fused([("x", None, None), ("y", None, None)]), 1, 5)] == ["x", "y"]


def test_default_config_is_valid_hybrid_rrf_data():
    cfg = RetrievalConfig.model_validate(DEFAULT_CONFIG)
    assert [r.name for r in cfg.retrievers] == ["bm25:post", "dense:post"]
    assert cfg.weights(crosslingual=True) == {"bm25:post": 1.0, "dense:post": 1.0}
    assert cfg.rrf_k == 60


@pytest.mark.parametrize("query, message", [
    (EvidenceQuery(" "), "text is empty"),
    (EvidenceQuery("x", k=0), "k must be between"),
    (EvidenceQuery("x", lang="english"), "lang must be"),
    (EvidenceQuery("x", strict_dates=True), "strict_dates needs"),
])
def test_invalid_queries(query, message):
    with pytest.raises(BadInput, match=message):
        query.validated()
