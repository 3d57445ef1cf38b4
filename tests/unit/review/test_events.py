"""What a decision's webhook carries (``plugin.review.events.event_data``)."""
from plugin.review.events import event_data
from plugin.review.model import EVENTS, Action
from plugin.review.records import Decision, ReviewItem

# as stored (the records are parsed at the store's edge)
ITEM = ReviewItem.from_source({
    "post_id": "p1", "tenant": "t", "text": "5G spreads covid", "lang": "en", "date": "2024-02-01",
    "source_url": "https://x/p1", "status": "confirmed", "created_at": "2024-02-01T00:00:00+00:00",
    "candidates": [{"factcheck_id": "fc1", "claim": "c1", "rank": 1, "confidence": 0.9},
                   {"factcheck_id": "fc2", "claim": "c2", "rank": 2, "confidence": 0.4}]})
CONFIRM = Decision.from_source({
    "id": "dec_1", "post_id": "p1", "action": "confirm", "factcheck_id": "fc2", "actor": "ana",
    "at": "2024-02-02T00:00:00+00:00", "origin": "desk", "candidates": [{"factcheck_id": "fc1"}],
    "supersedes": None})
UNDO = Decision.from_source({
    "id": "dec_2", "post_id": "p1", "action": "undo", "factcheck_id": None, "actor": "bo",
    "at": "2024-02-02T00:01:00+00:00", "origin": "api", "candidates": [], "supersedes": "dec_1"})


def test_every_deciding_action_but_not_a_claim_sends_an_event():
    assert {a: EVENTS.get(a) for a in Action} == {
        Action.CONFIRM: "match.confirmed", Action.MANUAL: "match.confirmed",
        Action.REJECT: "match.rejected", Action.NONE: "match.rejected",
        Action.NOT_A_CLAIM: None, Action.UNDO: "match.undone"}


def test_a_decision_names_the_post_and_the_fact_check_as_shown():
    data = event_data(CONFIRM, ITEM)
    assert "candidates" not in data["decision"] and data["decision"]["id"] == "dec_1"
    assert data["post"] == {"id": "p1", "text": "5G spreads covid", "lang": "en",
                            "date": "2024-02-01", "url": "https://x/p1"}
    assert data["factcheck"]["claim"] == "c2" and "undone" not in data


def test_an_undo_names_the_decision_it_took_back_and_who_undid_it():
    data = event_data(UNDO, ITEM, CONFIRM)
    assert data["decision"]["actor"] == "bo" and data["decision"]["supersedes"] == "dec_1"
    assert data["undone"] == {"id": "dec_1", "action": "confirm", "factcheck_id": "fc2", "actor": "ana",
                              "at": "2024-02-02T00:00:00+00:00", "origin": "desk"}
    assert data["factcheck"]["factcheck_id"] == "fc2"
