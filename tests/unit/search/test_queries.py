"""Query bodies as (input, expected body) tables."""
from datetime import date

import pytest

from plugin.models import Hit
from plugin.search.queries import (CANDIDATE_FIELDS, KNN_EF_SEARCH, Filters, SOURCE_FIELDS, bm25_query, date_clause,
                            filter_query, knn_query, read_candidates, sources_by_id, sources_query,
                            text_fields)

#: every candidate search reads doc values only: no _source, no _id, no hit counting
LEAN = {"stored_fields": "_none_", "docvalue_fields": ["id", "lang", "domain", "publisher"],
        "track_total_hits": False}

UNDATED = {"bool": {"must_not": [{"exists": {"field": "published_at"}}]}}


@pytest.mark.parametrize("filters, expected", [
    (Filters(), None),
    (Filters(langs=("es",)), {"bool": {"filter": [{"terms": {"lang": ["es"]}}]}}),
    (Filters(published_before=date(2020, 5, 1)),
     {"bool": {"filter": [{"bool": {"should": [{"range": {"published_at": {"lte": "2020-05-01"}}}, UNDATED],
                                    "minimum_should_match": 1}}]}}),
    (Filters(published_before=date(2020, 5, 1), within_days=30),
     {"bool": {"filter": [{"range": {"published_at": {"lte": "2020-05-01", "gte": "2020-04-01"}}}]}}),
    (Filters(deny=("example.org",)),
     {"bool": {"must_not": [{"bool": {"should": [{"terms": {"domain": ["example.org"]}},
                                                 {"terms": {"publisher": ["example.org"]}}],
                                      "minimum_should_match": 1}}]}}),
    (Filters(langs=("en", "es"), allow=("snopes.com",)),
     {"bool": {"filter": [{"terms": {"lang": ["en", "es"]}},
                          {"bool": {"should": [{"terms": {"domain": ["snopes.com"]}},
                                               {"terms": {"publisher": ["snopes.com"]}}],
                                    "minimum_should_match": 1}}]}}),
])
def test_filter_query(filters, expected):
    assert filter_query(filters) == expected


def test_date_clause_without_window_keeps_undated():
    assert date_clause(date(2021, 1, 2))["bool"]["should"][1] == UNDATED


@pytest.mark.parametrize("lang, expected", [
    ("en", ["claim_i18n.en^2", "title_i18n.en", "claim^2", "title"]),
    ("ko", ["claim_i18n.ko^2", "title_i18n.ko", "claim^2", "title"]),
    ("xx", ["claim^2", "title"]),
    (None, ["claim^2", "title"]),
])
def test_text_fields(lang, expected):
    assert text_fields(lang) == expected


def test_bm25_query_with_filter():
    flt = {"bool": {"filter": [{"terms": {"lang": ["en"]}}]}}
    assert bm25_query("vaccines alter DNA", lang="en", filters=flt, size=50) == {
        "size": 50, **LEAN, "track_total_hits": True,  # BM25 counts every hit (BM25_TRACK_TOTAL_HITS)
        "query": {"bool": {
            "must": [{"multi_match": {"query": "vaccines alter DNA", "type": "most_fields",
                                      "fields": ["claim_i18n.en^2", "title_i18n.en", "claim^2", "title"]}}],
            "filter": [flt]}}}


def test_bm25_query_without_filter_has_no_filter_key():
    body = bm25_query("x", lang=None, filters=None, size=5)
    assert "filter" not in body["query"]["bool"]


def test_knn_query_pushes_filter_into_knn():
    flt = {"bool": {"filter": [{"terms": {"lang": ["es"]}}]}}
    assert knn_query([0.5, -0.25], filters=flt, size=100) == {
        "size": 100, **LEAN,
        "query": {"knn": {"embedding": {"vector": [0.5, -0.25], "k": 100, "filter": flt,
                                        "method_parameters": {"ef_search": KNN_EF_SEARCH}}}}}


def test_knn_query_takes_numpy_vectors():
    import numpy as np

    body = knn_query(np.array([1, 2], dtype="float32"), filters=None, size=3)
    assert body["query"]["knn"]["embedding"] == {"vector": [1.0, 2.0], "k": 3,
                                                 "method_parameters": {"ef_search": KNN_EF_SEARCH}}
    assert all(type(x) is float for x in body["query"]["knn"]["embedding"]["vector"])


def test_embedding_never_returned():
    assert "embedding" not in SOURCE_FIELDS


def test_candidate_bodies_do_not_share_mutable_lists():
    body = bm25_query("x", lang=None, filters=None, size=5)
    body["docvalue_fields"].append("claim")
    assert knn_query([1.0], filters=None, size=5)["docvalue_fields"] == CANDIDATE_FIELDS
    assert CANDIDATE_FIELDS == ["id", "lang", "domain", "publisher"]


def test_sources_query_asks_for_the_final_fields_of_given_ids():
    assert sources_query(["a", "b"]) == {"size": 2, "_source": SOURCE_FIELDS, "track_total_hits": False,
                                         "query": {"terms": {"id": ["a", "b"]}}}


@pytest.mark.parametrize("hit, expected", [
    # a candidate search: doc values only, single values unwrapped
    ({"_score": 2.5, "fields": {"id": ["a"], "lang": ["en"], "publisher": ["Snopes"]}},
     Hit("a", 2.5, 1, "q", {"id": "a", "lang": "en", "publisher": "Snopes"})),
    # a body that asked for _source and _id (hybrid query, older bodies)
    ({"_id": "b", "_score": None, "_source": {"id": "b", "claim": "c"}},
     Hit("b", 0.0, 1, "q", {"id": "b", "claim": "c"})),
    # multi-valued doc values stay lists
    ({"_score": 1.0, "fields": {"id": ["c"], "domain": ["x.org", "y.org"]}},
     Hit("c", 1.0, 1, "q", {"id": "c", "domain": ["x.org", "y.org"]})),
])
def test_read_candidates(hit, expected):
    assert read_candidates({"hits": {"hits": [hit]}}, "q") == [expected]


def test_read_candidates_ranks_from_one():
    hits = [{"_score": 3.0, "fields": {"id": [i]}} for i in "xyz"]
    assert [(h.id, h.rank) for h in read_candidates({"hits": {"hits": hits}}, "q")] == [
        ("x", 1), ("y", 2), ("z", 3)]


def test_read_candidates_without_any_id_is_an_error():
    with pytest.raises(ValueError, match="id"):
        read_candidates({"hits": {"hits": [{"_score": 1.0, "fields": {"lang": ["en"]}}]}}, "q")


def test_sources_by_id():
    resp = {"hits": {"hits": [{"_id": "a", "_source": {"id": "a", "claim": "x"}},
                              {"_id": "b", "_source": {"claim": "y"}}]}}
    assert sources_by_id(resp) == {"a": {"id": "a", "claim": "x"}, "b": {"claim": "y"}}


@pytest.mark.parametrize("size, ef, expected", [
    (100, None, {"ef_search": KNN_EF_SEARCH}),   # the graph search explores more than it returns
    (500, None, None),                 # k alone is already wider
    (10, 50, {"ef_search": 50}),
    (10, 10, None),
])
def test_knn_query_ef_search(size, ef, expected):
    knn = knn_query([1.0], filters=None, size=size, ef_search=ef)["query"]["knn"]["embedding"]
    assert knn["k"] == size and knn.get("method_parameters") == expected


def test_a_window_reaching_before_year_one_starts_at_year_one():
    from datetime import date

    from plugin.search.queries import date_clause
    assert date_clause(date(1, 1, 10), 30) == {"range": {"published_at": {"lte": "0001-01-10", "gte": "0001-01-01"}}}
    assert date_clause(date(2021, 6, 1), 30)["range"]["published_at"]["gte"] == "2021-05-02"


def test_bm25_reads_the_first_words_of_a_huge_post():
    from plugin.search.queries import BM25_MAX_WORDS, bm25_query, bm25_text
    text = " ".join(f"w{i}" for i in range(5000))
    assert bm25_text(text).split() == text.split()[:BM25_MAX_WORDS]
    assert bm25_text("short post") == "short post"
    body = bm25_query(text, lang="en", filters=None, size=10)
    assert len(body["query"]["bool"]["must"][0]["multi_match"]["query"].split()) == BM25_MAX_WORDS


@pytest.mark.parametrize(("text", "expected"), [
    ("a@" * 10000, "a@" * 255 + "a"),  # one word, 10,000 terms: a 502 (over 1,024 clauses)
    ("中" * 20000, "中" * 256),  # no spaces: a term per character
    ("http://" * 2857, "http://" * 255 + "http"),
    ("x " * 100 + "中文" * 100, "x " * 100 + "中文" * 78),
    ("Covid-19 vaccines don't alter DNA, say 2 of 3 doctors.", "Covid-19 vaccines don't alter DNA, say 2 of 3 doctors."),
    ("a-" * 128, "a-" * 128),  # exactly BM25_MAX_TERMS: whole, trailing punctuation and all
])
def test_bm25_reads_at_most_max_terms(text, expected):
    from plugin.search.queries import BM25_MAX_TERMS, _TERM, bm25_text
    assert bm25_text(text) == expected
    assert len(_TERM.findall(bm25_text(text))) <= BM25_MAX_TERMS
