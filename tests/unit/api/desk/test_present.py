"""The desk's filters, form decoding and display helpers (pure)."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from api.desk import present as p
from plugin.errors import BadInput

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(("args", "expected"), [
    ({}, {"status": "pending", "sort": "newest"}),
    ({"lang": "EN ", "sort": "confidence"}, {"status": "pending", "sort": "confidence", "lang": "en"}),
    ({"confidence": "high"}, {"status": "pending", "sort": "newest", "min_confidence": 0.8, "max_confidence": None}),
    ({"confidence": "low"}, {"status": "pending", "sort": "newest", "min_confidence": None, "max_confidence": 0.5}),
    ({"age": "24h"}, {"status": "pending", "sort": "newest", "since": "2026-11-26T12:00:00+00:00"}),
    ({"age": "7d", "cursor": "abc"}, {"status": "pending", "sort": "newest", "since": "2026-11-20T12:00:00+00:00", "cursor": "abc"}),
    ({"status": "confirmed", "lang": "", "age": ""}, {"status": "confirmed", "sort": "newest"}),
])
def test_queue_args(args, expected):
    assert p.queue_args(args, NOW) == expected


def test_queue_args_default_status_for_history():
    assert p.queue_args({}, NOW, status="confirmed")["status"] == "confirmed"


@pytest.mark.parametrize(("args", "names"), [
    ({"status": "done"}, "status 'done'; valid: pending, confirmed"),
    ({"sort": "best"}, "sort 'best'; valid: newest, oldest, confidence"),
    ({"confidence": "very"}, "confidence 'very'; valid: high, medium, low"),
    ({"age": "1y"}, "age '1y'; valid: 24h, 7d"),
    ({"lang": "<script>"}, "invalid language"),
])
def test_queue_args_names_the_bad_value(args, names):
    with pytest.raises(BadInput, match=names.replace("(", r"\(")):
        p.queue_args(args, NOW)


def test_filter_state_drops_the_cursor():
    assert p.filter_state({"lang": "en", "cursor": "x", "age": ""}) == {"lang": "en"}


@pytest.mark.parametrize(("choice", "expected"), [
    ("confirm:fc-1", ("confirm", "fc-1")),
    ("confirm:ns:with:colons", ("confirm", "ns:with:colons")),
    ("manual:fc-9", ("manual", "fc-9")),
    ("reject", ("reject", None)),
    ("none", ("none", None)),
    ("not_a_claim", ("not_a_claim", None)),
    ("undo", ("undo", None)),
])
def test_parse_choice(choice, expected):
    assert p.parse_choice(choice) == expected


@pytest.mark.parametrize(("choice", "names"), [
    ("", "unknown action ''"), (None, "unknown action ''"), ("approve", "unknown action 'approve'"),
    ("confirm", "needs a fact-check id"), ("manual:", "needs a fact-check id"),
    ("reject:fc-1", "takes no fact-check id"),
])
def test_parse_choice_refuses(choice, names):
    with pytest.raises(BadInput, match=names):
        p.parse_choice(choice)


def test_decision_record():
    assert p.decision("post-1", "confirm:fc-2", "3:1", "  checked  ") == {
        "post_id": "post-1", "action": "confirm", "factcheck_id": "fc-2", "version": "3:1", "note": "checked"}
    assert p.decision("post-1", "none", "", None) == {"post_id": "post-1", "action": "none"}
    with pytest.raises(BadInput, match="names no post"):
        p.decision("", "none", None)
    with pytest.raises(BadInput, match="over 100 characters"):
        p.decision("post-1", "none", "x" * 101)


def pick(post_id, version="", top=""):
    return p.pick_value({"post_id": post_id, "version": version,
                         "candidates": [{"factcheck_id": top}] if top else []})


def test_bulk_decisions():
    a, b = pick("a&x=1", "2:1", "fc 1"), pick("b", "5:1", "fc-7")
    assert p.bulk_decisions([a, b, a], "confirm_top") == ([
        {"post_id": "a&x=1", "action": "confirm", "factcheck_id": "fc 1", "version": "2:1"},
        {"post_id": "b", "action": "confirm", "factcheck_id": "fc-7", "version": "5:1"}], [])
    assert p.bulk_decisions([a], "reject") == ([{"post_id": "a&x=1", "action": "reject", "version": "2:1"}], [])


def test_bulk_decisions_on_items_without_candidates():
    bare = pick("c", "1:1")
    assert p.bulk_decisions([bare], "reject") == ([{"post_id": "c", "action": "none", "version": "1:1"}], [])
    a = pick("a", "2:1", "fc-1")
    assert p.bulk_decisions([a, bare], "confirm_top") == (
        [{"post_id": "a", "action": "confirm", "factcheck_id": "fc-1", "version": "2:1"}], ["c"])


@pytest.mark.parametrize(("picks", "bulk", "names"), [
    (["post=a"], "approve", "unknown bulk action 'approve'"),
    ([], "reject", "no items selected"),
    (["post=c&v=1:1"], "confirm_top", "none of the selected items has a candidate"),
    (["v=1:1&top=f"], "reject", "names no post"),
    (["post=c&v=" + "9" * 101], "reject", "over 100 characters"),
])
def test_bulk_decisions_refuse(picks, bulk, names):
    with pytest.raises(BadInput, match=names):
        p.bulk_decisions(picks, bulk)


@pytest.mark.parametrize(("value", "expected"), [
    (None, "w0 unknown"), (0.0, "w0 low"), (0.49, "w10 low"), (0.5, "w10 medium"),
    (0.81, "w16 high"), (1.0, "w20 high"), (1.7, "w20 high"), (-1, "w0 low"),
])
def test_bar_class(value, expected):
    assert p.bar_class(value) == expected


def test_fresh_count_and_seen_at_newest():
    items = [{"created_at": "t2"}, {"created_at": "t2"}, {"created_at": "t1"}]
    assert p.seen_at_newest(items) == 2 and p.seen_at_newest([]) == 0
    assert p.fresh_count({"status": {"pending": 5}}, "2") == 3
    assert p.fresh_count({"status": {"pending": 1}}, "2") == 0  # one of them decided meanwhile
    assert p.fresh_count({}, None) == 0
    with pytest.raises(BadInput, match="invalid seen"):
        p.fresh_count({}, "many")


@pytest.mark.parametrize(("url", "expected"), [
    ("https://example.org/a?b=1", "https://example.org/a?b=1"),
    (" http://example.org ", "http://example.org"),
    ("javascript:alert(1)", None),
    ("JaVaScRiPt:alert(1)", None),
    ("data:text/html,<script>", None),
    ("//evil.example", None),
    ("https://", None),
    ("http://[::1", None),
    (None, None),
    (42, None),
])
def test_safe_url(url, expected):
    assert p.safe_url(url) == expected


@pytest.mark.parametrize(("signals", "expected"), [
    ({"bm25_rank": 1, "knn_similarity": 0.8123, "reranked": True, "rerank_score": 3.456},
     "BM25 rank 1 · kNN similarity 0.81 · reranked (score 3.46)"),
    ({"bm25_rank": None, "knn_similarity": 0.5, "reranked": False}, "not found by BM25 · kNN similarity 0.50 · not reranked"),
    ({"bm25_rank": 4, "reranked": True}, "BM25 rank 4 · not found by kNN · reranked"),
    (None, "not found by BM25 · not found by kNN · not reranked"),
    ({"bm25_rank": 2, "found_by": [{"signal": "same-image", "distance": 4}, {"signal": "ocr"}]},
     "same image (distance 4) · text read from the image · BM25 rank 2 · not found by kNN · not reranked"),
    ({"found_by": [{"signal": "text"}, "junk"]}, "not found by BM25 · not found by kNN · not reranked"),
])
def test_why_matched(signals, expected):
    assert p.why_matched(signals) == expected


def test_short_and_confidence_and_dom_id():
    assert p.short("a  b\nc") == "a b c"
    assert p.short("x" * 100, 10) == "x" * 9 + "…"
    assert p.confidence_text(None) == "unknown" and p.confidence_text(0.456) == "0.46"
    assert p.dom_id("post 1") == p.dom_id("post 1") != p.dom_id("post 2")
    assert p.dom_id("<a b>").startswith("item-") and p.dom_id("<a b>")[5:].isalnum()


def test_age_and_any_counts():
    assert p.age_counts({"day": 2, "week": 3, "older": 9}) == {"24h": 2, "7d": 5}
    assert p.age_counts({}) == {"24h": 0, "7d": 0}
    assert p.any_count({"en": 3, "de": 1}) == 4


@pytest.mark.parametrize(("target", "expected"), [
    ("/desk/", "/desk/"), ("/desk", "/desk"), ("/desk/?status=pending&cursor=abc", "/desk/?status=pending&cursor=abc"),
    ("/desk/items/кот", "/desk/items/%D0%BA%D0%BE%D1%82"), ("/desk/items/a%2Fb", "/desk/items/a%2Fb"),
    ("/desk/\r\nSet-Cookie: x=1", None), ("/desk/\n", None), ("/desk/\r", None), ("/desk/\t", None),
    ("/desk/\x00", None), ("/desk/\x7f", None), ("/desk/\x85", None), ("/desk/\u2028", None),
    ("/desk/\u200e", None), ("/desk/a b", None), ("/desks", None), ("//evil.example/desk", None),
    ("https://evil.example/desk", None), ("/desk\\evil", None), ("", None), (None, None),
    ("/desk/" + "a" * 2000, None),
])
def test_local_target_keeps_only_clean_desk_paths(target, expected):
    from api.desk.present import local_target

    assert local_target(target) == expected


def test_bulk_message_names_how_many_and_which_were_not_recorded():
    from api.desk.present import bulk_message

    won = {"actor": "Bo", "to_status": "rejected"}
    assert bulk_message(False, 3, [{}] * 3, [], 0) == "You rejected 3 items."
    assert bulk_message(True, 2, [{}], [], 1) == (
        "You confirmed the top candidate of 1 item. 1 had no candidate to confirm and stay pending.")
    msg = bulk_message(False, 200, [{}] * 50, [{"post_id": f"p{i}", "decision": won} for i in range(150)], 0)
    assert msg.startswith("You rejected 50 items of 200. 150 were not recorded: someone decided them first: "
                          "'p0' (Bo), 'p1' (Bo)")
    assert msg.endswith("and 145 more.")
