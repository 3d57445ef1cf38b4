"""What the one match path decides by itself: the configuration and the budget per occasion, and
that every path's answer is the matcher's result after the tenant's learning, typed."""
import pytest

from plugin.learn.steps import Learning
from plugin.search.request import MatchRequest
from plugin.search.result import Candidate, Match, MatchResult
from plugin.service.matching import MatchParts, Occasion, budget_for, config_for, match_post
from plugin.settings import Settings

CONFIGS = frozenset({"factsieve", "hybrid-rerank"})


@pytest.mark.parametrize("settings, requested, occasion, expected", [
    ({}, None, Occasion.LIVE, None),                         # the packaged default
    ({}, None, Occasion.JOB, "hybrid-rerank"),               # workers have time
    ({}, "bm25", Occasion.JOB, "bm25"),                      # asked for: always
    ({"retrieval_config": "factsieve"}, None, Occasion.LIVE, "factsieve"),
    ({"job_retrieval_config": "gone"}, None, Occasion.JOB, None),  # not in this deployment
    ({"job_retrieval_config": None}, None, Occasion.JOB, None),
])
def test_config_for(settings, requested, occasion, expected):
    assert config_for(Settings(**settings), CONFIGS, requested, occasion) == expected


@pytest.mark.parametrize("settings, given, occasion, expected", [
    ({}, None, Occasion.LIVE, 150.0),
    ({}, None, Occasion.JOB, None),
    ({"job_rerank_budget_ms": 500}, None, Occasion.JOB, 500.0),
    ({}, 90.0, Occasion.JOB, 90.0),
    ({}, 90.0, Occasion.LIVE, 90.0),
])
def test_budget_for(settings, given, occasion, expected):
    req = MatchRequest(text="x", rerank_budget_ms=given)
    assert budget_for(Settings(**settings), req, occasion) == expected


MATCH = {"id": "fc1", "score": 0.04, "rank": 1, "confidence": 0.9, "claim": "5G spreads covid",
         "title": None, "url": "https://x.org/1", "domain": None, "publisher": None, "rating": "False",
         "verdict": None, "lang": "en", "published_at": None, "claimant": None, "source": None,
         "explain": {"bm25:post": {"rank": 1, "score": 7.0}}, "signals": []}


class Matcher:
    def __init__(self):
        self.asked, self.config, self.reranker, self.embedder = [], None, None, type("E", (), {"name": "m"})()

    def match(self, req):
        self.asked.append(req)
        return MatchResult(lang="en", matches=[dict(MATCH)], took_ms=3.0, config="factsieve")

    def query_encoder_note(self, cfg):
        return None


class Tag:
    def apply(self, tenant, post, result):
        return Match(**{**result.__dict__, "notes": (*result.notes, f"learned for {tenant}: {post['text']}")})


def test_every_answer_is_the_matchers_after_the_tenants_learning(monkeypatch):
    monkeypatch.setattr("plugin.service.matching.versions_of", lambda m, r: {"retrieval_config": r.config})
    matcher, calls = Matcher(), []

    def matchers(config, **kw):
        calls.append((config, kw))
        return matcher

    parts = MatchParts(Settings(), matchers, Learning(steps=(Tag(),)), CONFIGS)
    found = match_post(parts, MatchRequest(text="5G", rerank=None), "t1", occasion=Occasion.JOB, post={"id": "p"})
    assert isinstance(found, Match) and found.candidates == (Candidate.from_dict(MATCH),)
    assert found.notes == ("learned for t1: 5G",) and found.versions == {"retrieval_config": "factsieve"}
    assert calls == [("hybrid-rerank", {"rerank": True, "tenant": "t1", "explained": False, "server_fusion": None})]
    assert matcher.asked[0].rerank_budget_ms is None  # a job: no budget by default
    match_post(parts, MatchRequest(text="5G", rerank=False), "t2")
    assert calls[-1] == (None, {"rerank": False, "tenant": "t2", "explained": False, "server_fusion": None})
    assert matcher.asked[-1].rerank_budget_ms == 150.0


def test_a_candidate_and_a_match_round_trip_their_json_exactly():
    d = {"lang": "en", "config": "factsieve", "took_ms": 3.0, "reranked": True, "notes": ["n"],
         "matches": [MATCH, {**MATCH, "id": "fc2", "rank": 2, "reason": "confirmed-by-desk",
                             "memory": {"post_id": "p0", "similarity": 0.97, "decision_id": "d"}},
                     {**MATCH, "id": "fc3", "rank": 3, "confidence_packaged": 0.8}]}
    again = Match.from_dict(d).to_dict()
    assert again == d and [list(m) for m in again["matches"]] == [list(m) for m in d["matches"]]
    with pytest.raises(ValueError, match="nonsense"):
        Candidate.from_dict({**MATCH, "nonsense": 1})
