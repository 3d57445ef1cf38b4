"""The review states, the transition rule and the decision records, as tables."""
import pytest

from plugin.errors import InvalidRequest
from plugin.search.result import Candidate
from plugin.review.model import (Action, Origin, ReviewStatus, candidates_of, decided_item,
                                 decision_record, item_record, next_status, signals_of,
                                 superseded, taken_back, training_pairs)

P, C, R, N, X = (ReviewStatus.PENDING, ReviewStatus.CONFIRMED, ReviewStatus.REJECTED,
                 ReviewStatus.NO_MATCH, ReviewStatus.NOT_A_CLAIM)


@pytest.mark.parametrize("status, action, previous, expected", [
    (P, Action.CONFIRM, None, C),
    (P, Action.MANUAL, None, C),
    (P, Action.REJECT, None, R),
    (P, Action.NONE, None, N),
    (P, Action.NOT_A_CLAIM, None, X),
    (C, Action.UNDO, P, P),
    (R, Action.UNDO, None, P),
    (X, Action.UNDO, P, P),
])
def test_allowed_transitions(status, action, previous, expected):
    assert next_status(status, action, previous) is expected


@pytest.mark.parametrize("status, action", [
    (P, Action.UNDO), (C, Action.CONFIRM), (C, Action.REJECT), (R, Action.MANUAL),
    (N, Action.NONE), (X, Action.NOT_A_CLAIM),
])
def test_refused_transitions_name_the_state(status, action):
    with pytest.raises(InvalidRequest) as err:
        next_status(status, action)
    assert err.value.status == 422
    assert status.value in str(err.value) and action.value in str(err.value)


@pytest.mark.parametrize("action, expected", [
    (Action.NONE, N), (Action.NOT_A_CLAIM, X), (Action.MANUAL, C)])
def test_an_item_without_candidates_takes_none_not_a_claim_or_manual(action, expected):
    assert next_status(P, action, has_candidates=False) is expected
    assert next_status(expected, Action.UNDO, P, has_candidates=False) is P


@pytest.mark.parametrize("action", [Action.CONFIRM, Action.REJECT])
def test_an_item_without_candidates_refuses_confirm_and_reject(action):
    with pytest.raises(InvalidRequest, match="without candidates.*manual, none, not_a_claim") as err:
        next_status(P, action, has_candidates=False)
    assert err.value.status == 422 and action.value in str(err.value)


def test_parse_lists_the_valid_values():
    assert Action.parse("not_a_claim", "action") is Action.NOT_A_CLAIM
    with pytest.raises(InvalidRequest, match="confirm, reject, none, not_a_claim, manual, undo"):
        Action.parse("approve", "action")
    with pytest.raises(InvalidRequest):
        Origin.parse(None, "origin")


@pytest.mark.parametrize("explain, reranked, expected", [
    ({"bm25:post": {"rank": 3, "score": 7.1}, "dense:post": {"rank": 1, "score": 0.91}}, False,
     {"bm25_rank": 3, "knn_similarity": 0.91, "reranked": False, "rerank_score": None}),
    ({"bm25:post": {"rank": 4, "score": 1}, "bm25:en": {"rank": 2, "score": 1},
      "dense:post": {"rank": 9, "score": 0.5}, "dense:en": {"rank": 1, "score": 0.8},
      "rerank": {"score": 0.97}}, True,
     {"bm25_rank": 2, "knn_similarity": 0.8, "reranked": True, "rerank_score": 0.97}),
    ({"ocr:bm25:post": {"rank": 2, "score": 1}, "ocr:dense:post": {"rank": 1, "score": 0.7},
      "same-image": {"rank": 1, "score": 4.0}}, False,  # a post with an image: its OCR text's
     {"bm25_rank": 2, "knn_similarity": 0.7, "reranked": False, "rerank_score": None}),
    ({}, True, {"bm25_rank": None, "knn_similarity": None, "reranked": False, "rerank_score": None}),
    (None, False, {"bm25_rank": None, "knn_similarity": None, "reranked": False, "rerank_score": None}),
])
def test_signals(explain, reranked, expected):
    assert signals_of(explain, reranked) == expected


def _match(i, conf=0.9):
    return {"id": f"fc{i}", "claim": f"claim {i}", "rating": "False", "publisher": "P",
            "published_at": f"2024-01-0{i}", "url": f"https://x/{i}", "lang": "en", "rank": i,
            "score": 1 / i, "confidence": conf, "explain": {"bm25:post": {"rank": i, "score": 1}}}


def _item(n=3):
    cands = candidates_of([Candidate.from_dict(_match(i)) for i in range(1, n + 1)], reranked=False)
    return item_record(tenant="t", post_id="p1", text="<script>x</script>", lang="en",
                       date="2024-02-01", source_url=None, config="hybrid-rrf",
                       versions={"retrieval_config": "hybrid-rrf"}, candidates=cands,
                       created_at="2024-02-02T00:00:00+00:00")


def test_an_item_without_candidates_has_no_confidence_and_its_none_teaches_nothing():
    item = _item(0)
    assert item.status is P and item.candidates == () and item.confidence is None
    d = decision_record(item, decision_id="d1", action=Action.NONE, actor="ana", origin=Origin.DESK,
                        at="2024-02-03T00:00:00+00:00", to_status=N)
    assert d.candidates == () and d.rank is None and training_pairs(d) == []


def test_candidates_keep_at_most_five_best_first():
    cands = candidates_of([Candidate.from_dict(_match(i)) for i in range(1, 9)], reranked=False)
    assert [c.factcheck_id for c in cands] == ["fc1", "fc2", "fc3", "fc4", "fc5"]
    assert cands[0].date == "2024-01-01" and cands[0].signals.bm25_rank == 1


def test_item_is_pending_with_the_top_confidence_and_the_text_verbatim():
    item = _item()
    assert item.status is P and item.confidence == 0.9
    assert item.text == "<script>x</script>"


def test_decision_records_the_chosen_candidate_and_the_snapshot():
    item = _item()
    d = decision_record(item, decision_id="d1", action=Action.CONFIRM, actor="ana",
                        origin=Origin.DESK, at="2024-02-03T00:00:00+00:00", to_status=C,
                        factcheck_id="fc2", note="<b>ok</b>")
    assert (d.rank, d.score, d.confidence) == (2, 0.5, 0.9)
    assert d.signals.bm25_rank == 2 and d.note == "<b>ok</b>"
    assert [c.factcheck_id for c in d.candidates] == ["fc1", "fc2", "fc3"]
    assert (d.from_status, d.to_status, d.origin, d.tenant) == (P, C, Origin.DESK, "t")
    after = decided_item(item, d)
    assert (after.status, after.decided_by) == (C, "ana")
    undo = decision_record(after, decision_id="d2", action=Action.UNDO, actor="bo", origin=Origin.API,
                           at="2024-02-04T00:00:00+00:00", to_status=P, supersedes="d1")
    back = decided_item(after, undo)
    assert (back.status, back.decided_by, back.last_decision.id) == (P, None, "d2")


def _decision(action, fc=None, did="d1", supersedes=None):
    return decision_record(_item(), decision_id=did, action=action, actor="a", origin=Origin.API,
                           at="2024", to_status=C, factcheck_id=fc, supersedes=supersedes)


@pytest.mark.parametrize("action, fc, expected", [
    (Action.CONFIRM, "fc3", [("fc3", 1), ("fc1", 0), ("fc2", 0)]),
    (Action.CONFIRM, "fc1", [("fc1", 1)]),
    (Action.MANUAL, "elsewhere", [("elsewhere", 1)]),
    (Action.REJECT, "fc2", [("fc2", 0)]),
    (Action.REJECT, None, [("fc1", 0), ("fc2", 0), ("fc3", 0)]),
    (Action.NONE, None, [("fc1", 0), ("fc2", 0), ("fc3", 0)]),
    (Action.NOT_A_CLAIM, None, []),
    (Action.UNDO, None, []),
])
def test_training_pairs(action, fc, expected):
    rows = training_pairs(_decision(action, fc))
    assert [(r["factcheck_id"], r["label"]) for r in rows] == expected
    assert all(r["post_text"] == "<script>x</script>" for r in rows)


def test_an_undo_drops_what_it_took_back_and_teaches_nothing_itself():
    ds = [_decision(Action.CONFIRM, "fc1", "d1"), _decision(Action.UNDO, None, "d2", supersedes="d1"),
          _decision(Action.REJECT, None, "d3")]
    assert superseded(ds) == {"d1"} and training_pairs(ds[1]) == []
    # the export's first pass: only each undo's ``supersedes``, as its filtered source holds it
    assert taken_back(d.to_source()["supersedes"] for d in ds) == {"d1"}
