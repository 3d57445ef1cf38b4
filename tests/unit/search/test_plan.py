"""``MatchPlan``: what a match searches, decided once (pure), and the bodies built from it."""
from datetime import date

import pytest

from plugin.models import Mode
from plugin.search.plan import SAME_LANG_BOOST, MatchPlan, dense_variants
from plugin.search.request import MatchRequest
from plugin.search.retrieval import RetrievalConfig, retrieval_config


def config(**extra):
    return RetrievalConfig.model_validate({
        "name": "t", "candidates": 30, "language_centering": 0.5,
        "retrievers": [{"kind": "bm25", "weight": 2.0, "cross_weight": 0.5, "stand_in": "dense:post"},
                       {"kind": "dense", "weight": 1.0}], **extra})


@pytest.mark.parametrize("mode, lang, crosslingual, langs, same_lang", [
    (Mode.AUTO, "en", True, None, SAME_LANG_BOOST),
    (Mode.CROSS, "en", True, None, 1.0),
    (Mode.MONO, "en", False, ("en",), 1.0),
    # no detected language: nothing to cross from, in every mode
    (Mode.AUTO, None, False, None, SAME_LANG_BOOST),
    (Mode.CROSS, None, False, None, 1.0),
    (Mode.MONO, None, False, None, 1.0),
])
def test_one_rule_governs_weights_stand_ins_and_centring(mode, lang, crosslingual, langs, same_lang):
    plan = MatchPlan.decide(MatchRequest(text="x", mode=mode, k=5), lang, config())
    assert plan.crosslingual is crosslingual and plan.filters.langs == langs
    assert plan.weights == ({"bm25:post": 0.5, "dense:post": 1.0} if crosslingual
                            else {"bm25:post": 2.0, "dense:post": 1.0})
    assert plan.stand_ins == ({"bm25:post": "dense:post"} if crosslingual else {})
    assert plan.centering == (0.5 if crosslingual else 0.0)
    assert plan.same_lang == same_lang and plan.size == 30


def test_the_configuration_s_mode_wins_and_k_widens_the_candidates():
    plan = MatchPlan.decide(MatchRequest(text="x", mode=Mode.CROSS, k=50), "en", config(mode="mono"))
    assert plan.mode is Mode.MONO and not plan.crosslingual and plan.size == 50


def test_queries_are_built_from_texts_and_vectors_alone():
    req = MatchRequest(text="x", mode=Mode.MONO, date=date(2021, 1, 1), within_days=7, deny=("x.com",))
    plan = MatchPlan.decide(req, "en", config())
    texts = {"post": "vaccines"}
    assert dense_variants(config(), texts) == ["post"]
    bodies, weights = plan.queries(config(), texts, {"post": [0.1, 0.2, 0.3]})
    assert list(bodies) == ["bm25:post", "dense:post"] and weights == {"bm25:post": 2.0, "dense:post": 1.0}
    assert bodies["dense:post"]["query"]["knn"]["embedding"]["vector"] == [0.1, 0.2, 0.3]
    assert plan.queries(config(), texts, {"post": [0.0]}) == plan.queries(config(), texts, {"post": [0.0]})


def test_a_variant_without_text_sits_out():
    cfg = retrieval_config("reveal")
    plan = MatchPlan.decide(MatchRequest(text="x"), "en", cfg)
    texts = {"post": "p", "hyde": None, "question": "q?", "debunk": "p fact check"}
    assert "hyde" not in dense_variants(cfg, texts)
    bodies, weights = plan.queries(cfg, texts, {v: [0.0] for v in dense_variants(cfg, texts)})
    assert "dense:hyde" not in bodies and "dense:hyde" not in weights


@pytest.mark.parametrize("mode, lang, own", [
    (Mode.AUTO, "en", 2.0), (Mode.AUTO, None, 0.0), (Mode.CROSS, "en", 0.0), (Mode.MONO, "en", 0.0)])
def test_the_own_language_pass_runs_in_auto_mode_for_a_detected_language_only(mode, lang, own):
    plan = MatchPlan.decide(MatchRequest(text="x", mode=mode, k=5), lang, config(own_language=2.0))
    assert plan.own_language == own
    bodies, weights = plan.queries(config(own_language=2.0), {"post": "vaccines"}, {"post": [0.1]})
    assert ("own:dense:post" in bodies) is (own > 0)


def test_the_own_language_pass_is_the_mono_search_at_its_weights_beside_the_crosslingual_one():
    cfg = config(own_language=2.0)
    plan = MatchPlan.decide(MatchRequest(text="x", mode=Mode.AUTO, k=5), "en", cfg)
    bodies, weights = plan.queries(cfg, {"post": "vaccines"}, {"post": [0.9]}, raw={"post": [0.1]})
    # the crosslingual sub-queries as before (centred vector, crosslingual weights, no filter) …
    assert weights == {"bm25:post": 0.5, "dense:post": 1.0, "own:bm25:post": 4.0, "own:dense:post": 2.0}
    assert bodies["dense:post"]["query"]["knn"]["embedding"]["vector"] == [0.9]
    assert "filter" not in bodies["dense:post"]["query"]["knn"]["embedding"]
    # … and the own-language ones: the uncentred vector, filtered to the post's language, exactly
    # as a mono plan builds them
    mono = MatchPlan.decide(MatchRequest(text="x", mode=Mode.MONO, k=5), "en", cfg)
    mono_bodies, _ = mono.queries(cfg, {"post": "vaccines"}, {"post": [0.1]})
    assert bodies["own:dense:post"] == mono_bodies["dense:post"]
    assert bodies["own:bm25:post"] == mono_bodies["bm25:post"]
    # no uncentred vectors given (nothing was centred): the one vector serves both
    again, _ = plan.queries(cfg, {"post": "vaccines"}, {"post": [0.1]})
    assert again["own:dense:post"] == mono_bodies["dense:post"]


def _hits(query, *rows):
    from plugin.models import Hit

    return [Hit(id=i, score=s, rank=r, query=query, source={"lang": lang})
            for r, (i, s, lang) in enumerate(rows, start=1)]


def test_a_fact_check_in_another_language_joins_the_own_language_pass_only_as_the_better_answer():
    from plugin.search.plan import admit_better_answers

    rankings = {
        "dense:post": _hits("dense:post", ("ko1", 0.95, "ko"), ("en1", 0.93, "en"), ("fr1", 0.92, "fr")),
        "bm25:post": _hits("bm25:post", ("en1", 9.0, "en")),
        "own:dense:post": _hits("own:dense:post", ("en1", 0.94, "en"), ("en2", 0.90, "en")),
        "own:bm25:post": _hits("own:bm25:post", ("en1", 9.0, "en"))}
    out = admit_better_answers(rankings, "en", {"bm25:post": "dense:post"})
    # ko1 beats the best English candidate on the crosslingual dense sub-query: first in both own
    # sub-queries (BM25's through its stand-in); fr1 does not, and stays out of them
    assert [(h.id, h.rank) for h in out["own:dense:post"]] == [("ko1", 1), ("en1", 2), ("en2", 3)]
    assert [(h.id, h.rank) for h in out["own:bm25:post"]] == [("ko1", 1), ("en1", 2)]
    assert out["dense:post"] is rankings["dense:post"] and out["bm25:post"] is rankings["bm25:post"]
    # a tie is the better answer too; nothing better: the rankings as they were
    tie = {**rankings, "dense:post": _hits("dense:post", ("en1", 0.93, "en"), ("ko1", 0.93, "ko"))}
    assert [h.id for h in admit_better_answers(tie, "en", {})["own:dense:post"]] == ["ko1", "en1", "en2"]
    none = {**rankings, "dense:post": _hits("dense:post", ("en1", 0.93, "en"), ("ko1", 0.90, "ko"))}
    assert admit_better_answers(none, "en", {"bm25:post": "dense:post"}) == none


def test_the_image_text_s_own_language_pass_reads_the_image_text_s_rankings():
    from plugin.search.plan import admit_better_answers

    rankings = {"ocr:dense:post": _hits("ocr:dense:post", ("ko1", 0.95, "ko"), ("en1", 0.93, "en")),
                "ocr:own:dense:post": _hits("ocr:own:dense:post", ("en1", 0.94, "en")),
                "dense:post": _hits("dense:post", ("en1", 0.99, "en"))}
    out = admit_better_answers(rankings, "en", {})
    assert [h.id for h in out["ocr:own:dense:post"]] == ["ko1", "en1"]


def test_a_better_answer_is_judged_without_its_language_s_offset():
    from plugin.search.plan import admit_better_answers

    rankings = {
        "dense:post": _hits("dense:post", ("ta1", 0.925, "ta"), ("en1", 0.922, "en"), ("ko1", 0.921, "ko")),
        "own:dense:post": _hits("own:dense:post", ("en1", 0.928, "en"))}
    # as scored, the Tamil teaser is the better answer; its language owes 0.006, English 0.001, Korean 0.0
    assert [h.id for h in admit_better_answers(rankings, "en", {})["own:dense:post"]] == ["ta1", "en1"]
    owed = {"dense:post": {"ta": 0.006, "en": 0.001, "ko": 0.0}}
    # judged: ta1 0.919 < en1 0.921 <= ko1 0.921: the Korean one is the better answer, in dense order
    assert [h.id for h in admit_better_answers(rankings, "en", {}, owed)["own:dense:post"]] == ["ko1", "en1"]
    # offsets of another sub-query change nothing here
    assert admit_better_answers(rankings, "en", {}, {"ocr:dense:post": owed["dense:post"]}) == \
        admit_better_answers(rankings, "en", {})


def test_admission_offsets_are_each_kNN_vector_s_own():
    import numpy as np

    from plugin.search.centering import LanguageCentroids, language_offsets
    from plugin.search.plan import admission_offsets
    from plugin.search.queries import bm25_query, knn_query

    c = LanguageCentroids(centroids={"en": np.array([1.0, 0.0]), "ta": np.array([0.0, 1.0])}, mean=np.array([0.5, 0.5]))
    # 0.5 * q.(c_M - mean) / 2: q = [0.6, 0.8] -> en 0.5 * -0.1 / 2, ta 0.5 * 0.1 / 2
    assert language_offsets([0.6, 0.8], c, 0.5) == pytest.approx({"en": -0.025, "ta": 0.025})
    assert language_offsets([0.6, 0.8], c, 0.0) == {} and language_offsets([0.6, 0.8], LanguageCentroids(), 0.5) == {}
    bodies = {"dense:post": knn_query([0.6, 0.8], filters=None, size=5),
              "ocr:dense:post": knn_query([1.0, 0.0], filters=None, size=5),
              "bm25:post": bm25_query("words", lang="en", filters=None, size=5)}
    got = admission_offsets(bodies, c, 0.5)
    assert set(got) == {"dense:post", "ocr:dense:post"}
    assert got["ocr:dense:post"] == pytest.approx({"en": 0.125, "ta": -0.125})
    assert admission_offsets(bodies, None, 0.5) is None and admission_offsets(bodies, c, 0.0) is None


def test_admission_centring_is_planned_with_the_own_language_pass_only():
    cfg = config(own_language=2.0, admission_centering=0.5)
    assert MatchPlan.decide(MatchRequest(text="x", mode=Mode.AUTO), "en", cfg).admission_centering == 0.5
    assert MatchPlan.decide(MatchRequest(text="x", mode=Mode.AUTO), "en", cfg).needs_centroids
    for mode, lang in ((Mode.CROSS, "en"), (Mode.MONO, "en"), (Mode.AUTO, None)):
        assert MatchPlan.decide(MatchRequest(text="x", mode=mode), lang, cfg).admission_centering == 0.0
    no_centring = config(own_language=2.0, admission_centering=0.5, language_centering=0.0)
    assert MatchPlan.decide(MatchRequest(text="x", mode=Mode.AUTO), "en", no_centring).needs_centroids
    assert not MatchPlan.decide(MatchRequest(text="x", mode=Mode.MONO), "en", no_centring).needs_centroids
