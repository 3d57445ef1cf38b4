"""The matcher's pure parts: request validation, plan, boosts, collapse."""
from datetime import date

import pytest

from plugin.errors import BadInput
from plugin.search.matcher import Matcher, MatchRequest, boost, collapse, same_claim
from plugin.models import Fused, Hit, Mode
from plugin.search.retrieval import retrieval_config
from plugin.settings import Settings
from plugin.search.variants import debunk_variant
from tests.stub_embedder import StubEmbedder


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


class FakeStore:
    """Answers candidate searches with doc values only and source fetches by id, and records
    every request, like the cluster would for a lean body."""

    def __init__(self, claims: dict[str, str], bm25: list[str], dense: list[str]):
        self.claims, self.order = claims, {"bm25": bm25, "dense": dense}
        self.msearches, self.fetches = [], []

    def plugins(self):
        return set()

    def msearch(self, index, bodies):
        self.msearches.append(bodies)
        out = []
        for body in bodies:
            assert body["stored_fields"] == "_none_" and "_source" not in body
            ids = self.order["dense" if "knn" in body["query"] else "bm25"][: body["size"]]
            out.append({"hits": {"hits": [{"_score": 10.0 - i, "fields": {"id": [d], "lang": ["en"]}}
                                          for i, d in enumerate(ids)]}})
        return out

    def search(self, index, body, search_pipeline=None):
        ids = body["query"]["terms"]["id"]
        self.fetches.append(ids)
        return {"hits": {"hits": [{"_id": d, "_source": {"id": d, "claim": self.claims[d], "lang": "en"}}
                                  for d in ids if d in self.claims]}}


def fake_matcher(store, **cfg):
    from plugin.search.retrieval import RetrievalConfig

    config = RetrievalConfig.model_validate({"name": "t", "retrievers": [{"kind": "bm25"}, {"kind": "dense"}],
                                             "candidates": 20, **cfg})
    m = Matcher(store=store, embedder=StubEmbedder(), settings=Settings(), config=config)
    m._model_checked = True
    return m


def test_match_fetches_sources_for_the_final_matches_only():
    ids = [str(i) for i in range(30)]
    store = FakeStore({d: f"claim number {d}" for d in ids}, bm25=ids, dense=ids[::-1])
    result = fake_matcher(store).match(MatchRequest(text="claim", lang="en", k=3))
    assert len(store.msearches) == 1 and len(store.fetches) == 1
    assert len(store.fetches[0]) == 3 == len(result.matches)
    assert store.fetches[0] == [m["id"] for m in result.matches]
    for m in result.matches:
        assert m["claim"] == f"claim number {m['id']}"
        assert set(m["explain"]) == {"bm25:post", "dense:post"}  # per-query ranks survive the fetch
    assert "fetch_ms" in result.timings_ms


def test_match_fetches_more_when_collapse_removes_duplicates():
    ids = [str(i) for i in range(30)]
    claims = {d: ("the same debunked claim again" if int(d) < 12 else f"claim {d}") for d in ids}
    store = FakeStore(claims, bm25=ids, dense=ids)
    result = fake_matcher(store, collapse=0.9).match(MatchRequest(text="claim", lang="en", k=3))
    assert [m["id"] for m in result.matches] == ["0", "12", "13"]
    assert len(store.fetches) == 2  # 3 + margin 6 were all duplicates: one more fetch
    assert store.fetches[0] == ids[:9] and store.fetches[1] == ids[9:19]


def test_match_keeps_doc_values_of_a_fact_check_deleted_before_the_fetch():
    ids = ["a", "b"]
    store = FakeStore({"b": "kept"}, bm25=ids, dense=ids)
    result = fake_matcher(store).match(MatchRequest(text="claim", lang="en", k=2))
    assert [(m["id"], m["claim"], m["lang"]) for m in result.matches] == [("a", None, "en"), ("b", "kept", "en")]


def test_reranked_head_has_sources():
    class Rev:
        def score(self, query, passages):
            assert all(passages), "every reranked candidate has its text"
            return [float(i) for i in range(len(passages))]  # reverses the head

    from plugin.search.retrieval import Rerank

    ids = [str(i) for i in range(30)]
    store = FakeStore({d: f"claim {d}" for d in ids}, bm25=ids, dense=ids)
    m = fake_matcher(store)
    m.config = m.config.model_copy(update={"rerank": Rerank(model="x", top=8)})
    m.reranker = Rev()
    result = m.match(MatchRequest(text="claim", lang="en", k=3))
    assert store.fetches == [ids[:8]]
    assert [x["id"] for x in result.matches] == ["7", "6", "5"]


def test_rank_prior_scores_are_log_odds_minus_the_prior_times_log_rank():
    from math import log

    from plugin.search.matcher import rank_prior_scores

    # hand-checked: ln(0.5/0.5) − 2·ln 1 = 0; ln(0.9/0.1) − 2·ln 2 = 2.1972 − 1.3863 = 0.8109
    got = rank_prior_scores([0.5, 0.9], [1, 2], 2.0)
    assert got == pytest.approx([0.0, 0.8109302], abs=1e-6)
    assert rank_prior_scores([0.2, 0.8], [3, 1], 0.0) == pytest.approx([log(0.25), log(4.0)])
    assert rank_prior_scores([1.0, 0.0], [1, 1], 1.0)[0] > 30 > -30 > rank_prior_scores([0.0], [1], 1.0)[0]
    with pytest.raises(ValueError, match="1-based"):
        rank_prior_scores([0.5], [0], 1.0)
    with pytest.raises(ValueError, match="ranks"):
        rank_prior_scores([0.5, 0.5], [1], 1.0)


def test_a_rank_prior_keeps_near_ties_in_fused_order_and_lets_a_confident_reranker_reorder():
    class Fixed:
        def __init__(self, probs):
            self.probs = probs

        def score(self, query, passages):
            return self.probs[:len(passages)]

    from plugin.search.retrieval import Rerank

    ids = [str(i) for i in range(1, 6)]
    store = FakeStore({d: f"claim {d}" for d in ids}, bm25=ids, dense=ids)
    m = fake_matcher(store)
    m.config = m.config.model_copy(update={"rerank": Rerank(model="x", top=5, rank_prior=2.0)})
    order = lambda: [x["id"] for x in m.match(MatchRequest(text="claim", lang="en", k=5)).matches]
    # 2 is a bit likelier than 1 to the reranker (log-odds 0.41 vs 0): the prior keeps 1 first
    m.reranker = Fixed([0.5, 0.6, 0.01, 0.01, 0.01])
    assert order()[:2] == ["1", "2"]
    # a confident reranker (log-odds 4.6 − 2·ln 2 = 3.2 > 0) still puts 2 first
    m.reranker = Fixed([0.5, 0.99, 0.01, 0.01, 0.01])
    assert order()[:2] == ["2", "1"]
    # without the prior, the reranker's own order
    m.config = m.config.model_copy(update={"rerank": Rerank(model="x", top=5)})
    m.reranker = Fixed([0.5, 0.6, 0.01, 0.01, 0.01])
    assert order()[:2] == ["2", "1"]


def test_llm_variants_are_written_by_the_generator_and_refused_without_one():
    emb = StubEmbedder()
    asked = []

    def generate(variant, text, lang):
        asked.append((variant, text, lang))
        return f"{variant} of {text}"

    matcher = Matcher(store=None, embedder=emb, settings=Settings(), config="reveal", generate=generate)
    bodies, weights = matcher.plan(MatchRequest(text="x"), "5G spreads covid", "en", matcher.config)
    assert sorted(asked) == [("hyde", "5G spreads covid", "en"), ("question", "5G spreads covid", "en")]
    assert {"dense:hyde", "bm25:question", "dense:question"} <= set(bodies)
    assert "hyde of 5G spreads covid" in emb.calls[0] and weights["dense:hyde"] == 2.0
    bare = Matcher(store=None, embedder=StubEmbedder(), settings=Settings(), config="reveal")
    with pytest.raises(BadInput, match="FACTSIEVE_LLM_URL"):
        bare.plan(MatchRequest(text="x"), "x", "en", bare.config)


def test_a_failed_llm_variant_sits_out_of_the_fusion():
    matcher = Matcher(store=None, embedder=StubEmbedder(), settings=Settings(), config="reveal",
                      generate=lambda variant, text, lang: None if variant == "hyde" else "q?")
    bodies, weights = matcher.plan(MatchRequest(text="x"), "x", "en", matcher.config)
    assert "dense:hyde" not in bodies and "dense:hyde" not in weights and "bm25:question" in bodies


@pytest.mark.parametrize("budget, pair_ms, top, pairs", [
    (None, None, 20, 20),      # no budget: the configuration's whole head
    (150, None, 20, 2),        # cost unknown: a probe
    (150, 40.0, 20, 3),
    (150, 5.0, 20, 20),        # capped at the head
    (50, 40.0, 20, 1),         # under MIN_RERANK_PAIRS: the matcher falls back to fused order
    (150, None, 1, 1),
    (None, 40.0, 1, 1),        # no budget: even a one-pair head is reranked
])
def test_pairs_within_the_budget(budget, pair_ms, top, pairs):
    from plugin.search.matcher import pairs_within

    assert pairs_within(budget, pair_ms, top) == pairs


def test_the_rerank_budget_is_validated():
    with pytest.raises(BadInput, match="rerank_budget_ms"):
        MatchRequest(text="x", rerank_budget_ms=0).validated()


def test_a_configuration_with_a_query_encoder_embeds_the_post_with_its_tower():
    from plugin.search.retrieval import RetrievalConfig

    base, tower = StubEmbedder(), StubEmbedder()
    config = RetrievalConfig.model_validate({"name": "t", "retrievers": [{"kind": "bm25"}, {"kind": "dense"}],
                                             "query_encoder": "claims"})
    matcher = Matcher(store=None, embedder=base, settings=Settings(), config=config,
                      query_encoders={"claims": tower})
    matcher.plan(MatchRequest(text="a post", lang="en"), "a post", "en", config)
    assert tower.calls == [["a post"]] and base.calls == []
    assert matcher.query_encoder_note(config) is None
    plain = retrieval_config("dense")
    matcher.plan(MatchRequest(text="a post", lang="en"), "a post", "en", plain)
    assert base.calls == [["a post"]]


def test_a_query_encoder_that_cannot_load_falls_back_to_the_base_and_says_why(tmp_path):
    from plugin.search.retrieval import RetrievalConfig

    base = StubEmbedder()
    config = RetrievalConfig.model_validate({"name": "t", "retrievers": [{"kind": "bm25"}, {"kind": "dense"}],
                                             "query_encoder": "no-such-adapter"})
    matcher = Matcher(store=None, embedder=base, settings=Settings(cache_dir=tmp_path), config=config)
    matcher.plan(MatchRequest(text="a post", lang="en"), "a post", "en", config)
    assert base.calls == [["a post"]]
    assert "no query adapter 'no-such-adapter'" in matcher.query_encoder_note(config)


@pytest.mark.parametrize("name", ["../x", "", "a b", "x" * 101])
def test_query_encoder_names_are_plain(name):
    from pydantic import ValidationError

    from plugin.search.retrieval import RetrievalConfig

    with pytest.raises(ValidationError):
        RetrievalConfig.model_validate({"name": "t", "retrievers": [{"kind": "dense"}], "query_encoder": name})


# -- a reranker stays within the languages it was trained on ----------------------------------------
def _head(*langs: str | None) -> list[Fused]:
    return [Fused(id=str(i), score=1.0, rank=i,
                  contributions={"q": Hit(str(i), 1.0, i, "q", {"lang": lang} if lang else {})})
            for i, lang in enumerate(langs, start=1)]


def test_a_reranker_without_known_languages_reranks_everything():
    from plugin.search.matcher import outside_languages

    assert outside_languages(None, "ko", _head("es", "en")) is None
    assert outside_languages(frozenset(), None, _head("es")) is None


def test_a_reranker_trained_on_english_keeps_other_posts_and_mixed_heads_in_fused_order():
    from plugin.search.matcher import outside_languages

    en = frozenset({"en"})
    assert outside_languages(en, "en", _head("en", "en", None)) is None  # a candidate without lang: no evidence
    assert "this post is es" in outside_languages(en, "es", _head("es", "es"))
    assert "unknown language" in outside_languages(en, None, _head("en"))
    note = outside_languages(en, "en", _head("en", "ko", "es", "ko"))
    assert "candidates include es, ko" in note and "fused (first-stage) order" in note


def test_a_reranker_that_fails_while_scoring_leaves_the_fused_order_and_says_its_error(caplog):
    class Broken:
        name = "broken"

        def score(self, query, passages):
            raise RuntimeError("onnxruntime: bad input shape")

    from plugin.search.retrieval import Rerank

    ids = [str(i) for i in range(30)]
    store = FakeStore({d: f"claim {d}" for d in ids}, bm25=ids, dense=ids)
    m = fake_matcher(store)
    m.config = m.config.model_copy(update={"rerank": Rerank(model="x", top=8)})
    m.reranker = Broken()
    with caplog.at_level("WARNING", logger="plugin.search.matcher"):
        result = m.match(MatchRequest(text="claim", lang="en", k=3, rerank=True))
    assert [x["id"] for x in result.matches] == ["0", "1", "2"] and result.reranked is False
    assert any("reranker 'broken' failed (RuntimeError: onnxruntime: bad input shape)" in n
               for n in result.notes)
    assert not any("no reranker is configured" in n for n in result.notes)
    assert any("bad input shape" in r.getMessage() for r in caplog.records)


def test_a_reranker_that_failed_to_load_is_reported_with_its_error(monkeypatch):
    from plugin.search import rerank
    from plugin.search.retrieval import Rerank

    monkeypatch.setattr(rerank, "_LOAD_ERRORS", {"x": "no ONNX cross-encoder in /models/x"})
    ids = [str(i) for i in range(30)]
    store = FakeStore({d: f"claim {d}" for d in ids}, bm25=ids, dense=ids)
    m = fake_matcher(store)
    m.config = m.config.model_copy(update={"rerank": Rerank(model="x", top=8)})
    for asked in (None, True):
        result = m.match(MatchRequest(text="claim", lang="en", k=3, rerank=asked))
        assert result.reranked is False
        assert ("the reranker 'x' failed to load (no ONNX cross-encoder in /models/x): "
                "the matches are in fused (first-stage) order") in result.notes
    assert m.match(MatchRequest(text="claim", lang="en", k=3, rerank=False)).notes == ()
