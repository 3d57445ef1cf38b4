"""The review queue's query bodies, as (input, expected) tables."""
import pytest

from plugin.errors import InvalidRequest
from plugin.review.model import ReviewStatus
from plugin.review.queries import (Sort, bool_filter, confidence_filter, counts_of, decode_cursor,
                                   decisions_body, encode_cursor, export_query, lang_filter,
                                   queue_body, since_filter, status_filter)


@pytest.mark.parametrize("clause, expected", [
    (status_filter(ReviewStatus.PENDING), {"term": {"status": "pending"}}),
    (status_filter(None), None),
    (lang_filter("de"), {"term": {"lang": "de"}}),
    (lang_filter(None), None),
    (confidence_filter(0.5, None), {"range": {"confidence": {"gte": 0.5}}}),
    (confidence_filter(None, 0.8), {"range": {"confidence": {"lte": 0.8}}}),
    (confidence_filter(0.2, 0.8), {"range": {"confidence": {"gte": 0.2, "lte": 0.8}}}),
    (confidence_filter(None, None), None),
    (since_filter("2024-01-01"), {"range": {"created_at": {"gte": "2024-01-01"}}}),
    (bool_filter([None, None]), {"match_all": {}}),
    (bool_filter([{"term": {"a": 1}}, None]), {"bool": {"filter": [{"term": {"a": 1}}]}}),
])
def test_clauses(clause, expected):
    assert clause == expected


def test_queue_body_is_faceted():
    body = queue_body("t1", status=ReviewStatus.PENDING, lang="en", limit=10)
    assert body["query"] == {"bool": {"filter": [{"term": {"tenant": "t1"}}]}}
    assert body["post_filter"] == {"bool": {"filter": [{"term": {"status": "pending"}},
                                                       {"term": {"lang": "en"}}]}}
    # each facet's counts take every filter but its own
    assert body["aggs"]["status"]["filter"] == {"bool": {"filter": [{"term": {"lang": "en"}}]}}
    assert body["aggs"]["lang"]["filter"] == {"bool": {"filter": [{"term": {"status": "pending"}}]}}
    assert body["size"] == 10 and body["seq_no_primary_term"] is True
    assert "search_after" not in body


@pytest.mark.parametrize("sort, first", [
    (Sort.NEWEST, {"created_at": {"order": "desc"}}),
    (Sort.OLDEST, {"created_at": {"order": "asc"}}),
    (Sort.CONFIDENCE, {"confidence": {"order": "desc", "missing": "_last"}}),
    (Sort.DECIDED, {"decided_at": {"order": "desc", "missing": "_last"}}),
])
def test_sorts_are_total(sort, first):
    clauses = queue_body("t", sort=sort)["sort"]
    assert clauses[0] == first and clauses[-1] == {"post_id": {"order": "asc"}}


def test_cursor_round_trip_and_refusals():
    values = [1700000000000, "post/1"]
    assert decode_cursor(encode_cursor(values)) == values
    assert queue_body("t", after=values)["search_after"] == values
    for bad in ("", "not-base64!", encode_cursor({"a": 1}), "e30"):  # e30 = {}
        with pytest.raises(InvalidRequest):
            decode_cursor(bad)


def test_sort_parse():
    assert Sort.parse("oldest") is Sort.OLDEST
    assert Sort.parse("decided") is Sort.DECIDED
    with pytest.raises(InvalidRequest, match="newest, oldest, confidence, decided"):
        Sort.parse("random")


def test_counts_list_every_status():
    aggs = {"status": {"v": {"buckets": [{"key": "pending", "doc_count": 3}]}},
            "lang": {"v": {"buckets": [{"key": "en", "doc_count": 2}, {"key": "de", "doc_count": 1}]}},
            "confidence": {"v": {"buckets": {"low": {"doc_count": 1}, "medium": {"doc_count": 0},
                                             "high": {"doc_count": 2}}}},
            "age": {"v": {"buckets": {"day": {"doc_count": 3}, "week": {"doc_count": 0},
                                      "older": {"doc_count": 0}}}}}
    assert counts_of(aggs) == {
        "status": {"pending": 3, "confirmed": 0, "rejected": 0, "no_match": 0, "not_a_claim": 0},
        "lang": {"en": 2, "de": 1}, "confidence": {"low": 1, "medium": 0, "high": 2},
        "age": {"day": 3, "week": 0, "older": 0}}


def test_decision_bodies_are_tenant_scoped():
    body = decisions_body("t", "p")
    assert body["query"]["bool"]["filter"] == [{"term": {"tenant": "t"}}, {"term": {"post_id": "p"}}]
    order = [{"at": {"order": "asc"}}, {"id": {"order": "asc"}}]
    # review decisions only: a claim's split and merge events name no post
    reviews = {"exists": {"field": "post_id"}}
    assert export_query("t") == {"query": {"bool": {"filter": [{"term": {"tenant": "t"}}, reviews]}}, "sort": order}
    assert export_query("t", "2024-01-01")["query"]["bool"]["filter"][2] == \
        {"range": {"at": {"gte": "2024-01-01"}}}
    assert export_query("t", undos=True) == {
        "query": {"bool": {"filter": [{"term": {"tenant": "t"}}, reviews, {"term": {"action": "undo"}}]}},
        "sort": order, "_source": ["supersedes"]}


@pytest.mark.parametrize(("values", "sort"), [
    ([None, None], Sort.NEWEST),              # W251bGwsbnVsbF0: OpenSearch answered 500, the API 503
    (["x", "y"], Sort.NEWEST),                # a date that does not parse
    ([True, "p"], Sort.OLDEST),               # a bool is not epoch milliseconds
    ([1700000000000], Sort.NEWEST),           # too short for the sort
    ([0.5, 1700000000000, "p", "q"], Sort.CONFIDENCE),  # too long
    ([{"a": 1}, "p"], Sort.DECIDED),
    ([1700000000000, ""], Sort.NEWEST),
    (["NaN", 1700000000000, "p"], Sort.CONFIDENCE),
])
def test_a_cursor_of_the_wrong_shape_or_types_is_a_422(values, sort):
    with pytest.raises(InvalidRequest, match="cursor") as err:
        decode_cursor(encode_cursor(values), sort)
    assert err.value.status == 422


@pytest.mark.parametrize(("values", "sort"), [
    ([1700000000000, "p"], Sort.NEWEST), ([1700000000000, "p"], Sort.OLDEST),
    ([0.73, 1700000000000, "p"], Sort.CONFIDENCE), (["-Infinity", 1700000000000, "p"], Sort.CONFIDENCE),
    ([-9223372036854775808, "p"], Sort.DECIDED),
])
def test_cursors_the_api_gives_decode(values, sort):
    assert decode_cursor(encode_cursor(values), sort) == values


def test_the_probe_s_null_cursor_is_refused():
    with pytest.raises(InvalidRequest):
        decode_cursor("W251bGwsbnVsbF0")
