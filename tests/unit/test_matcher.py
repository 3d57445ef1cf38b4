"""The matcher's pure parts: request validation, plan, boosts, collapse."""
from datetime import date

import numpy as np
import pytest

from plugin.errors import BadInput
from plugin.matcher import Matcher, MatchRequest, boost, collapse, same_claim
from plugin.models import Fused, Hit, Mode
from plugin.retrieval import get_config
from plugin.settings import Settings
from plugin.variants import debunk_variant


class StubEmbedder:
    """Deterministic vectors: enough to check which texts get embedded, in one batch."""

    name, dim = "stub", 3

    def __init__(self):
        self.calls = []

    def encode_queries(self, texts):
        self.calls.append(list(texts))
        return np.array([[len(t), 1.0, 0.0] for t in texts], dtype="float32")

    encode_passages = encode_queries


def fused(i, claim, lang="en", domain=None, score=1.0):
    src = {"claim": claim, "lang": lang, "domain": domain}
    return Fused(id=str(i), score=score, rank=i, contributions={"q": Hit(str(i), score, i, "q", src)})


@pytest.mark.parametrize("req, message", [
    (MatchRequest(text=" "), "empty"),
    (MatchRequest(text="x", k=0), "k must"),
    (MatchRequest(text="x", k=101), "k must"),
    (MatchRequest(text="x", lang="English"), "ISO 639-1"),
    (MatchRequest(text="x", within_days=3), "needs a date"),
    (MatchRequest(text="x" * 20001), "longer"),
])
def test_request_validation(req, message):
    with pytest.raises(BadInput, match=message):
        req.validated()


def test_plan_multiquery_embeds_once_and_filters_every_subquery():
    emb = StubEmbedder()
    matcher = Matcher(store=None, embedder=emb, settings=Settings(), config="multiquery")
    req = MatchRequest(text="vaccines alter DNA", mode=Mode.MONO, date=date(2021, 1, 1))
    bodies, weights = matcher.plan(req, "vaccines alter DNA", "en", matcher.config)
    assert set(bodies) == {"bm25:post", "dense:post", "bm25:debunk", "dense:debunk"}
    assert len(emb.calls) == 1
    assert sorted(emb.calls[0]) == sorted(["vaccines alter DNA", debunk_variant("vaccines alter DNA", "en")])
    assert weights == {"bm25:post": 1.5, "dense:post": 1.5, "bm25:debunk": 3.0, "dense:debunk": 3.0}
    for name, body in bodies.items():
        flt = body["query"]["bool"]["filter"][0] if name.startswith("bm25") else \
            body["query"]["knn"]["embedding"]["filter"]
        assert {"terms": {"lang": ["en"]}} in flt["bool"]["filter"]
    assert bodies["bm25:debunk"]["query"]["bool"]["must"][0]["multi_match"]["query"].endswith("fact check")


def test_plan_cross_mode_has_no_language_filter_and_cross_weights():
    matcher = Matcher(store=None, embedder=StubEmbedder(), settings=Settings(), config="hybrid-rrf")
    bodies, weights = matcher.plan(MatchRequest(text="x", mode=Mode.CROSS), "x", "es", matcher.config)
    assert "filter" not in bodies["bm25:post"]["query"]["bool"]
    assert weights == {"bm25:post": 0.5, "dense:post": 0.5}


def test_boost_trusted_domains_and_same_language():
    items = [fused(1, "a", lang="es", score=1.0), fused(2, "b", domain="snopes.com", score=0.8),
             fused(3, "c", lang="en", score=0.95)]
    out = boost(items, {"snopes.com": 1.5}, "en", 1.1)
    assert [f.id for f in out] == ["2", "3", "1"]
    assert out[0].score == pytest.approx(0.8 * 1.5 * 1.1)
    assert [f.rank for f in out] == [1, 2, 3]
    assert items[0].score == 1.0  # inputs untouched


def test_boost_without_boosts_is_identity():
    items = [fused(1, "a"), fused(2, "b")]
    assert boost(items, {}, "en", 1.0) == items


def test_collapse_keeps_first_of_near_duplicates():
    items = [fused(1, "Vaccines alter your DNA, experts say"), fused(2, "vaccines alter your DNA experts say!"),
             fused(3, "5G spreads the virus"), fused(4, "Hot water kills the virus")]
    assert [f.id for f in collapse(items, 0.8, 10)] == ["1", "3", "4"]
    assert [f.id for f in collapse(items, 0.8, 2)] == ["1", "3"]


@pytest.mark.parametrize("a, b, t, same", [
    ("a b c d", "a b c d", 1.0, True),
    ("a b c d", "a b c e", 0.6, True),
    ("a b c d", "a b c e", 0.7, False),
    ("", "a", 0.1, False),
])
def test_same_claim(a, b, t, same):
    assert same_claim(a, b, t) is same
