"""The reranker's training groups from a decision log (pure)."""
from __future__ import annotations

from plugin.learn.calibrate import held_out
from plugin.learn.reranker_data import (DecisionGroup, decision_groups, factcheck_ids, split,
                                        with_texts)
from plugin.review.records import Decision


def dec(i: int, post: str, action: str, fc: str | None = None, *, origin: str = "desk",
        shown: tuple[str, ...] = ("a", "b", "c"), supersedes: str | None = None) -> Decision:
    return Decision.from_source({
        "id": f"d{i}", "post_id": post, "post_text": f"text of {post}", "post_lang": "en",
        "action": action, "factcheck_id": fc, "origin": origin, "actor": "ana", "supersedes": supersedes,
        "at": f"2026-01-01T00:00:{i:02d}", "candidates": [
            {"factcheck_id": f, "rank": k + 1} for k, f in enumerate(shown)]})


def test_a_confirm_is_positive_and_the_other_shown_are_negatives_best_ranked_first() -> None:
    groups = decision_groups([dec(1, "p", "confirm", "b")])
    assert groups == [DecisionGroup("p", "en", "text of p", "b", ("a", "c"))]


def test_a_reject_of_the_post_adds_its_negative_and_manual_keeps_every_shown_as_negative() -> None:
    groups = decision_groups([dec(1, "p", "reject", "z", shown=("a",)), dec(2, "p", "manual", "m")])
    assert groups[0].positive == "m"
    assert groups[0].negatives == ("a", "b", "c", "z")


def test_what_teaches_nothing_makes_no_group() -> None:
    log = [dec(1, "none", "none"), dec(2, "claimless", "not_a_claim"),
           dec(3, "auto", "confirm", "a", origin="auto"),
           dec(4, "undone", "confirm", "a"), dec(5, "undone", "undo", supersedes="d4"),
           dec(6, "alone", "confirm", "a", shown=("a",))]  # nothing to rank it above
    assert decision_groups(log) == []


def test_the_newest_confirm_wins() -> None:
    groups = decision_groups([dec(1, "p", "confirm", "a"), dec(2, "p", "confirm", "c")])
    assert groups[0].positive == "c" and "a" in groups[0].negatives


def test_held_out_is_the_recalibrations_rule_and_texts_drop_deleted_factchecks() -> None:
    groups = [DecisionGroup(f"post-{i}", "en", "t", "a", ("b", "c")) for i in range(40)]
    fit, held = split(groups)
    assert {g.post_id for g in held} == {g.post_id for g in groups if held_out(g.post_id)}
    assert 0 < len(held) < len(groups) and len(fit) + len(held) == 40
    assert factcheck_ids(groups) == ["a", "b", "c"]
    kept = with_texts(groups[:2], {"a": "A", "c": "C"})
    assert [g.negatives for g in kept] == [("c",), ("c",)]
    assert with_texts(groups[:1], {"b": "B"}) == []  # its positive is gone
