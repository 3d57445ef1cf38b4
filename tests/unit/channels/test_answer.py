"""What a tipline answers (pure), and its measurement."""
from __future__ import annotations

from plugin.channels.answer import Reply, TiplineRule, decide, default_rule
from plugin.lab.tipline import choose, score
from plugin.search.result import Candidate, Match

RULE = TiplineRule(threshold=0.9, max_results=3)


def cand(i: str, conf: float | None) -> Candidate:
    return Candidate(id=i, score=1.0, rank=0, confidence=conf, fields={})


def match(*cands: Candidate) -> Match:
    return Match(lang="en", config="t", took_ms=1.0, candidates=tuple(cands))


def test_sure_lists_what_clears_the_threshold_at_most_three():
    reply = decide(match(cand("a", 0.99), cand("b", 0.95), cand("c", 0.93), cand("d", 0.92), cand("e", 0.2)), RULE)
    assert reply.sure and [c.id for c in reply.factchecks] == ["a", "b", "c"]
    assert [c.id for c in decide(match(cand("a", 0.91), cand("b", 0.5)), RULE).factchecks] == ["a"]


def test_not_sure_says_why():
    assert decide(match(), RULE) == Reply(False, reason="no_match")
    assert decide(match(cand("a", 0.89)), RULE) == Reply(False, reason="unsure")
    assert decide(match(cand("a", None)), RULE) == Reply(False, reason="no_confidence")


def test_what_the_desk_answered_is_sure_whatever_its_confidence():
    from dataclasses import replace

    from plugin.models import DESK_ANSWERED

    for reason in DESK_ANSWERED:
        answered = replace(cand("a", 0.6), reason=reason)
        assert decide(match(answered, cand("b", 0.95)), RULE) == Reply(True, (answered,))
    assert decide(match(replace(cand("a", 0.6), reason="something-else")), RULE).reason == "unsure"


def test_the_default_rule_is_the_data_file():
    rule = default_rule()
    assert 0.5 <= rule.threshold <= 1.0 and rule.max_results == 3


def test_score_and_choose():
    matches = {"q1": match(cand("a", 0.99)), "q2": match(cand("x", 0.96)), "q3": match(cand("b", 0.7))}
    qrels = {"q1": {"a"}, "q2": {"y"}, "q3": {"b"}}
    out = score(matches, qrels, TiplineRule(0.95))
    assert (out["messages"], out["answered"], out["precision"]) == (3, 2, 0.5)
    assert out["not_answered"] == {"unsure": 1}
    picked = choose(matches, qrels, TiplineRule(0.95), thresholds=(0.5, 0.97, 0.999))
    assert picked["table"][0]["precision"] == round(2 / 3, 4) and picked["table"][1]["precision"] == 1.0
    assert picked["chosen"] is None  # one right answer of one says little: its Wilson bound is 0.27


def test_choose_asks_the_wilson_bound_not_the_observed_share():
    """96 right of 100 is 0.96 observed but 0.91 by the bound; 200 right of 200 clears 0.95."""
    def many(prefix: str, n: int, conf: float, right: bool) -> tuple[dict, dict]:
        ids = [f"{prefix}{i}" for i in range(n)]
        return ({q: match(cand(q if right else "x", conf)) for q in ids}, {q: {q} for q in ids})

    sure, sure_q = many("s", 200, 0.99, True)
    mid, mid_q = many("m", 96, 0.9, True)
    bad, bad_q = many("b", 4, 0.9, False)
    out = choose({**sure, **mid, **bad}, {**sure_q, **mid_q, **bad_q}, TiplineRule(0.5), thresholds=(0.8, 0.95))
    low = {r["threshold"]: (r["precision"], r["precision_low"]) for r in out["table"]}
    assert low[0.8] == (0.9867, 0.9706)  # 296 of 300
    lone = choose({**mid, **bad}, {**mid_q, **bad_q}, TiplineRule(0.5), thresholds=(0.8,))
    assert lone["table"][0]["precision"] == 0.96 and lone["table"][0]["precision_low"] < 0.95
    assert lone["chosen"] is None and out["chosen"] == 0.8


def test_unanswerable_messages_count_against_precision():
    matches = {"q1": match(cand("a", 0.99))}
    without = {"q1": match(cand("z", 0.97)), "q2": match(cand("y", 0.5))}
    out = score(matches, {"q1": {"a"}}, TiplineRule(0.95), without)
    assert (out["messages"], out["answered"], out["precision"]) == (3, 2, 0.5)
    assert out["answerable"] == {"messages": 1, "answered": 1, "precision": 1.0}
    assert out["unanswerable"] == {"messages": 2, "answered_wrongly": 1}
    assert "misses" not in out
    # the wrong answers, to read: what was sent, and whether the message had an answer indexed
    out = score({**matches, "q3": match(cand("b", 0.96))}, {"q1": {"a"}, "q3": {"c"}}, TiplineRule(0.95), without,
                misses=True)
    assert out["misses"] == [{"query": "q3", "unanswerable": False, "sent": [{"id": "b", "claim": None, "confidence": 0.96}]},
                             {"query": "q1", "unanswerable": True, "sent": [{"id": "z", "claim": None, "confidence": 0.97}]}]


def test_a_channel_answers_from_its_own_threshold_else_the_tenants_tier_else_the_default():
    from plugin.channels.records import Channel, Kind
    from plugin.service.tipline import threshold_of

    ch = Channel("ch_0123456789abcdef", "t", Kind.TELEGRAM, "n", "x")
    assert threshold_of(ch, None) == (default_rule().threshold, "default")
    assert threshold_of(ch, 0.91) == (0.91, "tenant_tier")
    from dataclasses import replace

    assert threshold_of(replace(ch, threshold=0.7), 0.91) == (0.7, "channel")
