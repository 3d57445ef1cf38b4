"""A claim's confirmed fact-check first in a later post's match (pure), and the claim step."""
from __future__ import annotations

from plugin.claims.answer import CLAIM_CONFIDENCE, inherited
from plugin.models import CONFIRMED_BY_DESK, CONFIRMED_FOR_CLAIM
from plugin.claims.cluster import Earlier, PostSignals
from plugin.claims.records import Claim, FactCheckRef, Lead
from plugin.learn.claim_step import ClaimAnswer
from plugin.search.result import Candidate, Match


def cand(i: str, conf: float | None = 0.5, reason: str | None = None) -> Candidate:
    return Candidate(id=i, score=1.0, rank=0, confidence=conf, fields={"claim": f"claim {i}"}, reason=reason)


def match(*cands: Candidate) -> Match:
    return Match(lang="en", config="t", took_ms=1.0, candidates=tuple(cands))


def test_the_claims_fact_check_comes_first_marked():
    out = inherited(match(cand("a", 0.9), cand("b", 0.3)), "b", "c1")
    assert [m.id for m in out.candidates] == ["b", "a"] and [m.rank for m in out.candidates] == [1, 2]
    first = out.candidates[0]
    assert first.reason == CONFIRMED_FOR_CLAIM and first.memory == {"claim_id": "c1"}
    assert first.confidence == CLAIM_CONFIDENCE
    assert inherited(match(cand("b", 0.99)), "b", "c1").candidates[0].confidence == 0.99  # never lower


def test_a_missing_fact_check_is_added_from_its_source_or_left_out():
    out = inherited(match(cand("a")), "z", "c1", {"claim": "z's claim"})
    assert [m.id for m in out.candidates] == ["z"] and out.candidates[0].claim == "z's claim"
    assert inherited(match(cand("a")), "z", "c1") == match(cand("a"))
    assert [m.id for m in inherited(match(), "z", "c1", {"claim": "x"}).candidates] == ["z"]


def test_memorys_own_decision_for_the_post_wins():
    m = match(cand("a", 0.96, CONFIRMED_BY_DESK), cand("b"))
    assert inherited(m, "b", "c1") is m


class Claims:
    def __init__(self, claim: Claim | None, answered: bool = True):
        self.claim, self.answered, self.reads = claim, answered, 0

    def has_answered(self, tenant):
        return self.answered

    def earlier(self, tenant, vector, k, answer):
        self.reads += 1
        return [Earlier(PostSignals("p0"), "c1", 0.97)]

    def find(self, tenant, claim_id):
        return self.claim if self.claim and claim_id == self.claim.id else None


class Posts:
    def vector(self, text):
        return [1.0]

    def factchecks(self, ids):
        return {i: {"claim": f"claim {i}"} for i in ids}


def claim(fc: FactCheckRef | None) -> Claim:
    return Claim(id="c1", tenant="t", lead=Lead("p0", "x", "en", "2026-11-20"), post_count=1,
                 first_seen="2026-11-20", last_seen="2026-11-20", fact_check=fc)


def test_the_claim_step_answers_with_an_answered_claim_only():
    post = {"id": "p1", "text": "5G spreads the virus"}
    answered = ClaimAnswer(Claims(claim(FactCheckRef("f9", "x", 1.0, confirmed=True))), Posts())
    assert answered.apply("t", post, match(cand("a"))).candidates[0].id == "f9"
    unconfirmed = ClaimAnswer(Claims(claim(FactCheckRef("f9", "x", 0.7))), Posts())
    assert unconfirmed.apply("t", post, match(cand("a"))) == match(cand("a"))
    quiet = Claims(claim(None), answered=False)
    assert ClaimAnswer(quiet, Posts()).apply("t", post, match(cand("a"))) == match(cand("a"))
    assert quiet.reads == 0  # no read for a tenant with no answered claim
