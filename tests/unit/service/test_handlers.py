"""The post handler matches a post with everything it gives: filters and rerank budget too."""
from datetime import date

from plugin.models import Mode
from plugin.learn.steps import Learning
from plugin.review.rules import Rules
from plugin.search.request import MatchRequest
from plugin.search.result import MatchResult
from plugin.service.handlers import run_post
from plugin.service.matching import MatchParts
from plugin.settings import Settings


class FakeMatcher:
    def __init__(self):
        self.requests = []

    def match(self, req):
        self.requests.append(req)
        return MatchResult(lang="en", matches=[], took_ms=1.0, config="t")


class FakeReview:
    def __init__(self):
        self.items = []

    def record_item(self, *args, image=None):
        self.items.append(args)


class FakeServices:
    def __init__(self):
        self.matcher_ = FakeMatcher()
        self.webhooks = type("Hooks", (), {"all": staticmethod(lambda tenant: [])})()
        self.review = FakeReview()
        # what auto-confirm reads (the handler hands it the parts): no tenant opted in, no tier
        self.review_rules = Rules()
        self.recalibrations = type("Held", (), {"get": staticmethod(lambda tenant: None)})()
        self.learning = Learning()
        self.remembered = []
        self.posts = type("Posts", (), {
            "remember": staticmethod(lambda tenant, post, lang, joined=None: self.remembered.append(
                (tenant, post["id"], lang))),
            "vector": staticmethod(lambda text: [1.0, 0.0])})()
        self.counted = []
        self.claims = type("Claims", (), {
            "recent": None,  # the last seconds' posts: none here
            "joined_before": staticmethod(lambda tenant, doc_id: None),
            "earlier": staticmethod(lambda tenant, vector, k, answer: []),
            "add_post": staticmethod(lambda tenant, claim_id, post: self.counted.append((claim_id, post.post_id)))})()

    def matcher(self, config=None, **kw):
        return self.matcher_

    @property
    def matching(self):
        return MatchParts(settings=Settings(), matcher=self.matcher, learning=self.learning, configs=frozenset())


def test_the_post_handler_passes_filters_and_budget_through(monkeypatch):
    # the versions behind a match are ``plugin.search.versions``' to name (a real matcher's)
    monkeypatch.setattr("plugin.service.matching.versions_of", lambda matcher, result: {"retrieval_config": result.config})
    services = FakeServices()
    post = {"id": "p1", "text": "5G spreads covid", "lang": "en", "date": "2021-03-01", "mode": "cross",
            "k": 4, "within_days": 30, "allow": ["snopes.com"], "deny": ["x.com"], "rerank_budget_ms": 90}
    result = run_post(services, {"id": "j", "input": {"post": post}}, lambda did: None)
    assert result["post_id"] == "p1" and result["deliveries"] == []
    assert services.matcher_.requests == [MatchRequest(
        text="5G spreads covid", lang="en", date=date(2021, 3, 1), mode=Mode.CROSS, k=4, within_days=30,
        allow=("snopes.com",), deny=("x.com",), rerank_budget_ms=90.0)]
    # the review desk gets the post, its match and the versions behind it, without matches too
    # (``ReviewDesk.record_item`` applies the tenant's rules)
    (item,) = services.review.items
    assert item[:6] == ("default", "p1", "5G spreads covid", "en", "2021-03-01", None)
    assert item[6].candidates == () and item[6].versions == {"retrieval_config": "t"}
    assert services.remembered == [("default", "p1", "en")]  # what later posts are compared with
    # the post starts a claim of its own (no earlier posts), counted once, named in the answer
    assert services.counted == [(result["claim"]["claim_id"], "p1")] and result["claim"]["via"] is None
