"""The memory's pure parts: which posts and decisions count, and how a match result changes."""
import pytest

from plugin.learn.memory import (CONFIRMED_BY_DESK, SAME_POST_CONFIDENCE, Memory, Neighbour, RememberedDecision,
                                 live_decisions, memory_confidence, near_duplicates, pairs_of,
                                 remembered, verdicts)
from plugin.review.records import Decision
from plugin.search.result import Match


def dec(id, post, action, fc=None, at="2024-01-01T00:00:00", supersedes=None, cands=("a", "b", "c"),
        origin="desk"):
    return Decision.from_source({"id": id, "post_id": post, "action": action, "factcheck_id": fc, "at": at,
                                 "supersedes": supersedes, "origin": origin, "actor": "ana",
                                 "candidates": [{"factcheck_id": c, "rank": i} for i, c in enumerate(cands, 1)]})


def match(id, confidence=0.5):
    return {"id": id, "score": 0.1, "rank": 0, "confidence": confidence, "claim": f"claim {id}",
            "explain": {"bm25:post": {"rank": 1, "score": 1.0}}}


def result(*ids):
    return Match.from_dict({"lang": "en", "config": "c",
                            "matches": [{**match(i), "rank": r} for r, i in enumerate(ids, 1)]})


# -- which posts ----------------------------------------------------------------------------------
def test_near_duplicates_put_the_post_itself_first_then_the_close_ones_once():
    found = [Neighbour("q", 0.96), Neighbour("p", 0.5), Neighbour("r", 0.99), Neighbour("s", 0.90),
             Neighbour("r", 0.98)]
    assert near_duplicates("p", found, 0.95) == [Neighbour("p", 1.0), Neighbour("r", 0.99),
                                                 Neighbour("q", 0.96)]
    assert near_duplicates(None, found, 0.95) == [Neighbour("r", 0.99), Neighbour("q", 0.96)]
    assert near_duplicates(None, [Neighbour("s", 0.90)], 0.95) == []


def test_a_neighbour_below_the_threshold_counts_when_it_makes_the_same_claim():
    text = "RT @x: Bill Gates wants to microchip everyone with the vaccine https://t.co/a"
    close = Neighbour("s", 0.91, "bill gates wants to microchip everyone with the vaccine!! #wakeup")
    other = Neighbour("t", 0.92, "Bill Gates funds vaccine research in Africa")
    assert near_duplicates(None, [close, other], 0.95, text) == [close]
    assert near_duplicates(None, [close, other], 0.95, text, jaccard=None) == []


# -- which decisions --------------------------------------------------------------------------------
@pytest.mark.parametrize("decisions, live", [
    ([dec("d1", "p", "confirm", "a")], {"p": "d1"}),
    # undone: neither the decision nor its undo is in force
    ([dec("d1", "p", "confirm", "a"), dec("u1", "p", "undo", at="2024-01-02", supersedes="d1")], {}),
    # decided again after the undo: the new one
    ([dec("d1", "p", "reject", at="2024-01-01"), dec("u1", "p", "undo", at="2024-01-02", supersedes="d1"),
      dec("d2", "p", "confirm", "b", at="2024-01-03")], {"p": "d2"}),
    # an automatic decision counts until undone
    ([dec("d1", "p", "confirm", "a", origin="auto")], {"p": "d1"}),
    ([dec("d1", "p", "confirm", "a", origin="auto"),
      dec("u1", "p", "undo", at="2024-01-02", supersedes="d1")], {}),
    # two posts
    ([dec("d1", "p", "none"), dec("d2", "q", "confirm", "a")], {"p": "d1", "q": "d2"}),
])
def test_live_decisions(decisions, live):
    assert {p: d.id for p, d in live_decisions(decisions).items()} == live


@pytest.mark.parametrize("decision, pairs", [
    (dec("d", "p", "confirm", "b"), [("b", True)]),
    (dec("d", "p", "manual", "z"), [("z", True)]),
    (dec("d", "p", "reject", "b"), [("b", False)]),
    (dec("d", "p", "reject"), [("a", False), ("b", False), ("c", False)]),
    (dec("d", "p", "none"), [("a", False), ("b", False), ("c", False)]),
    (dec("d", "p", "not_a_claim"), []),
])
def test_pairs_of_a_decision(decision, pairs):
    assert pairs_of(decision) == pairs


def test_the_closest_post_wins_a_fact_check_and_the_newest_among_equals():
    near = [Neighbour("p", 1.0), Neighbour("q", 0.97), Neighbour("r", 0.97)]
    live = {"p": dec("d1", "p", "reject", "a"),
            "q": dec("d2", "q", "confirm", "a", at="2024-02-01"),
            "r": dec("d3", "r", "none", at="2024-03-01", cands=("b", "c"))}
    said = verdicts(near, live, "p")
    assert said["a"] == RememberedDecision("a", False, "p", 1.0, "d1", same_post=True)
    assert said["b"] == RememberedDecision("b", False, "r", 0.97, "d3")
    live["r"] = dec("d3", "r", "confirm", "c", at="2024-01-01")
    live["q"] = dec("d2", "q", "reject", "c", at="2024-02-01")
    assert verdicts(near, live, "p")["c"].decision_id == "d2"  # newer, equally close


# -- how the result changes ------------------------------------------------------------------------
def test_rejected_pairs_are_dropped_and_the_confirmed_one_comes_first():
    said = {"b": RememberedDecision("b", False, "p0", 0.97, "d1"), "c": RememberedDecision("c", True, "p0", 0.97, "d2")}
    out = remembered(result("a", "b", "c"), said).to_dict()
    assert [(m["id"], m["rank"]) for m in out["matches"]] == [("c", 1), ("a", 2)]
    top = out["matches"][0]
    assert top["reason"] == CONFIRMED_BY_DESK
    assert top["memory"] == {"post_id": "p0", "similarity": 0.97, "decision_id": "d2"}
    assert top["confidence"] == 0.96 and top["explain"] == match("c")["explain"]
    assert "reason" not in out["matches"][1] and out["config"] == "c"


def test_a_confirmed_fact_check_missing_from_the_matches_is_put_in_without_growing_them():
    said = {"z": RememberedDecision("z", True, "p", 1.0, "d1", same_post=True)}
    out = remembered(result("a", "b"), said, {"z": {"claim": "the claim", "url": "https://x.org/z"}}).to_dict()
    assert [m["id"] for m in out["matches"]] == ["z", "a"]
    z = out["matches"][0]
    assert (z["claim"], z["url"], z["score"], z["rank"]) == ("the claim", "https://x.org/z", 0.0, 1)
    assert z["confidence"] == SAME_POST_CONFIDENCE and z["reason"] == CONFIRMED_BY_DESK
    # no matches at all: the remembered one is the answer
    assert [m["id"] for m in remembered(result(), said, {"z": {}}).to_dict()["matches"]] == ["z"]
    # deleted since: nothing to put in
    assert remembered(result("a"), said, {}) == result("a")


def test_nothing_said_about_these_matches_leaves_the_result_itself():
    r = result("a", "b")
    assert remembered(r, {"x": RememberedDecision("x", False, "p", 1.0, "d")}) is r


def test_memory_confidence_is_the_desks_word_never_below_the_matchers():
    assert memory_confidence(RememberedDecision("a", True, "p", 1.0, "d", same_post=True)) == SAME_POST_CONFIDENCE
    assert memory_confidence(RememberedDecision("a", True, "q", 0.99, "d")) == 0.96
    assert memory_confidence(RememberedDecision("a", True, "q", 0.93, "d")) == 0.96
    assert memory_confidence(RememberedDecision("a", True, "q", 0.91, "d")) == 0.75
    assert memory_confidence(RememberedDecision("a", True, "q", 0.96, "d"), matched=0.997) == 0.997


# -- the step, over an in-memory reader -------------------------------------------------------------
class Reader:
    """Posts and decisions per tenant, as ``PostMemory`` would read them."""

    def __init__(self, posts, decisions, factchecks=None):
        self.posts, self.decs, self.fcs = posts, decisions, factchecks or {}

    def has_decisions(self, tenant):
        return any(t == tenant for t, _ in self.decs)

    def vector(self, text):
        self.embedded = getattr(self, "embedded", 0) + 1
        return [float(len(text))]

    def neighbours(self, tenant, vector, k):
        return [n for t, n in self.posts if t == tenant][:k]

    def decisions(self, tenant, post_ids):
        return [d for t, d in self.decs if t == tenant and d.post_id in post_ids]

    def factchecks(self, ids):
        return {i: self.fcs[i] for i in ids if i in self.fcs}


def test_the_step_applies_only_the_tenants_own_decisions():
    reader = Reader(posts=[("t1", Neighbour("old", 0.98)), ("t2", Neighbour("old2", 0.99))],
                    decisions=[("t1", dec("d1", "old", "confirm", "c")),
                               ("t2", dec("d2", "old2", "reject", "a")),
                               ("t2", dec("d3", "new", "none"))])  # t2's post with the same id
    step = Memory(reader, min_similarity=0.95, neighbours=10)
    post = {"id": "new", "text": "a re-post"}
    assert [m["id"] for m in step.apply("t1", post, result("a", "b", "c")).to_dict()["matches"]] == ["c", "a", "b"]
    assert step.apply("t3", post, result("a", "b", "c")) == result("a", "b", "c")
    assert [m["id"] for m in step.apply("t2", post, result("a", "b", "c", "d")).to_dict()["matches"]] == ["d"]


def test_the_step_below_the_threshold_changes_nothing():
    reader = Reader(posts=[("t", Neighbour("old", 0.90))], decisions=[("t", dec("d1", "old", "none"))])
    r = result("a")
    assert Memory(reader, min_similarity=0.95, neighbours=10).apply("t", {"id": "n", "text": "x"}, r) is r


def test_a_tenant_without_decisions_costs_no_embedding_and_no_neighbour_search():
    reader = Reader(posts=[("t", Neighbour("old", 0.99))], decisions=[("u", dec("d1", "old", "none"))])
    r = result("a")
    assert Memory(reader, min_similarity=0.95, neighbours=10).apply("t", {"id": "n", "text": "x"}, r) is r
    assert getattr(reader, "embedded", 0) == 0


def test_the_publics_tipline_feedback_is_never_a_decision_in_force():
    desk = dec("d1", "p1", "reject", "a")
    said = dec("d2", "p1", "confirm", "a", at="2024-01-02T00:00:00", origin="tipline")
    assert {p: d.id for p, d in live_decisions([desk, said]).items()} == {"p1": "d1"}
    assert live_decisions([said]) == {}
