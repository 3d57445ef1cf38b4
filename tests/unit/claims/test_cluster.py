"""The join rule and the lead rule (pure)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from plugin.claims.cluster import Earlier, JoinRule, Member, PostSignals, choose, lead_of, links, served_rule
from plugin.errors import BadInput

RULE = JoinRule(min_similarity=0.9, same_claim=0.8, same_answer=0.8, same_answer_similarity=0.85,
                bm25=None, image_distance=31)
WORDS = frozenset("the vaccine changes your dna".split())


def post(pid: str, words=frozenset(), answer=None, conf=None, image=None) -> PostSignals:
    return PostSignals(pid, words, answer, conf, image)


def test_each_signal_links_on_its_own():
    new = post("n", WORDS, "fc1", 0.9, "0" * 64)
    assert links(RULE, new, Earlier(post("a"), "c1", similarity=0.95)) == ("embedding",)
    assert links(RULE, new, Earlier(post("b", WORDS), "c1", similarity=0.1)) == ("same_claim",)
    assert links(RULE, new, Earlier(post("c", answer="fc1", conf=0.85), "c1", similarity=0.86)) == ("same_answer",)
    assert links(RULE, new, Earlier(post("d", image="0" * 63 + "f"), "c1", similarity=0.1)) == ("image",)
    assert links(RULE, new, Earlier(post("e"), "c1", similarity=0.5)) == ()


def test_same_answer_needs_both_confident_and_similar():
    new = post("n", answer="fc1", conf=0.9)
    assert links(RULE, new, Earlier(post("a", answer="fc1", conf=0.7), "c", similarity=0.88)) == ()
    assert links(RULE, new, Earlier(post("a", answer="fc1", conf=0.9), "c", similarity=0.80)) == ()
    assert links(RULE, new, Earlier(post("a", answer="fc2", conf=0.9), "c", similarity=0.88)) == ()
    assert links(replace(RULE, same_answer=None), new, Earlier(post("a", answer="fc1", conf=0.9), "c", 0.88)) == ()


def test_bm25_links_only_when_the_rule_has_it():
    e = Earlier(post("a"), "c", similarity=0.1, bm25=0.7)
    assert links(RULE, post("n"), e) == ()
    assert links(replace(RULE, bm25=0.6), post("n"), e) == ("bm25",)


def test_the_most_similar_linked_post_wins_and_kept_out_claims_are_skipped():
    new = post("n")
    earlier = [Earlier(post("a"), "c1", 0.92), Earlier(post("b"), "c2", 0.97), Earlier(post("c"), "c3", 0.5)]
    assert choose(RULE, new, earlier).claim_id == "c2"
    assert choose(RULE, new, earlier, kept_out=frozenset({"c2"})).claim_id == "c1"
    assert choose(RULE, new, earlier, kept_out=frozenset({"c1", "c2"})).claim_id is None
    joined = choose(RULE, new, earlier)
    assert (joined.via, joined.signals, joined.similarity) == ("b", ("embedding",), 0.97)


def test_a_post_never_joins_through_itself():
    assert choose(RULE, post("n"), [Earlier(post("n"), "c1", 1.0)]).claim_id is None


def test_lead_is_confirmed_then_confident_then_earliest():
    members = [Member("b", "2026-01-02", confidence=0.9), Member("a", "2026-01-01", confidence=0.5),
               Member("c", "2026-01-03", confirmed=True, confidence=0.1)]
    assert lead_of(members) == "c"
    assert lead_of(members[:2]) == "b"
    assert lead_of([Member("z", "2026-01-01"), Member("y", "2026-01-01")]) == "y"
    assert lead_of([]) is None


def test_served_rule_is_the_data_file_and_signals_can_be_switched_off():
    rule = served_rule()
    assert rule.min_similarity is not None and rule.neighbours > 0
    only = rule.only(["embedding"])
    assert only.same_claim is None and only.same_answer is None and only.image_distance is None
    with pytest.raises(BadInput):
        rule.only(["telepathy"])
    with pytest.raises(BadInput):
        JoinRule.from_mapping({"min_similarity": 0.9, "colour": "red"})


def test_a_split_posts_cannot_link_holds_for_posts_linked_to_it():
    split = PostSignals("s", kept_out=frozenset({"c1"}))
    earlier = [Earlier(post("a"), "c1", 0.96), Earlier(split, "c2", 0.95)]
    # the new post links to both; the split post's cannot-link keeps it out of c1
    assert choose(RULE, post("n"), earlier).claim_id == "c2"
    # without the link to the split post, c1 is fine
    assert choose(RULE, post("n"), earlier[:1]).claim_id == "c1"


def test_a_merge_by_hand_overrides_an_earlier_cannot_link():
    split = PostSignals("s", kept_out=frozenset({"c1"}))
    # the split post's claim c2 was merged into c1 since: posts linked to it join c1
    earlier = [Earlier(split, "c1", 0.95, joined_claim="c2")]
    assert choose(RULE, post("n"), earlier).claim_id == "c1"
