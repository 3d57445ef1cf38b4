"""``RerankGate``: whether, and how far, a match is reranked (pure), and the reranked order."""
import pytest

from plugin.models import Fused, Hit
from plugin.search.rerank import UnavailableReranker, reorder
from plugin.search.rerank_gate import FUSED_ORDER, MIN_RERANK_PAIRS, REPROBE_AFTER, RerankGate
from plugin.search.retrieval import Rerank, RetrievalConfig

CFG = RetrievalConfig.model_validate({"name": "t", "retrievers": [{"kind": "bm25"}],
                                      "rerank": {"model": "m", "top": 20}})
PLAIN = CFG.model_copy(update={"rerank": None})


class English:
    languages = frozenset({"en"})


def head(n: int = 30, lang: str = "en") -> list[Fused]:
    return [Fused(id=str(i), score=1.0 / i, rank=i, contributions={"q": Hit(str(i), 1.0, i, "q", {"lang": lang})})
            for i in range(1, n + 1)]


def decide(gate=RerankGate(), cfg=CFG, reranker=object(), asked=None, lang="en", fused=None, budget_ms=None,
           sure=None):
    return gate.decide(cfg, reranker, asked=asked, lang=lang, fused=head() if fused is None else fused,
                       budget_ms=budget_ms, sure=sure)


def test_without_a_budget_the_configured_head_is_reranked():
    assert decide()[:2] == (20, None)


@pytest.mark.parametrize("kwargs, note", [
    ({"asked": False}, None),
    ({"cfg": PLAIN}, None),
    ({"reranker": None}, None),
    ({"cfg": PLAIN, "asked": True}, "no reranker is configured for configuration 't'"),
    ({"reranker": None, "asked": True}, "no reranker is configured"),
    ({"reranker": UnavailableReranker("m", "onnxruntime is not installed")},
     "the reranker 'm' failed to load (onnxruntime is not installed)"),
    ({"reranker": UnavailableReranker("m", "boom"), "asked": True}, "the reranker 'm' failed to load (boom)"),
    ({"reranker": UnavailableReranker("m", "boom"), "asked": False}, None),
    ({"reranker": English(), "lang": "es"}, "this post is es"),
    ({"reranker": English(), "fused": head(lang="ko")}, "candidates include ko"),
])
def test_reasons_to_keep_the_fused_order(kwargs, note):
    pairs, got, gate, _ = decide(**kwargs)
    assert pairs == 0 and gate == RerankGate()
    assert got is None if note is None else note in got


def test_a_budget_probes_then_fits_what_the_measured_cost_allows():
    pairs, note, gate, _ = decide(budget_ms=150)
    assert (pairs, note) == (2, "reranked the top 2 of 20 within the 150 ms budget")
    gate = gate.measured(40.0)
    assert decide(gate, budget_ms=150)[:2] == (3, "reranked the top 3 of 20 within the 150 ms budget")
    assert decide(gate, budget_ms=150, fused=head(3))[:2] == (3, None)  # every candidate fitted
    assert gate.measured(60.0).pair_ms == pytest.approx(0.7 * 40 + 0.3 * 60)


def test_a_head_the_first_stage_is_sure_of_keeps_the_fused_order_on_every_path():
    skipping = CFG.model_copy(update={"rerank": Rerank(model="m", top=20, skip_at=0.9)})
    pairs, note, gate, _ = decide(cfg=skipping, budget_ms=150, sure=0.93, gate=RerankGate(pair_ms=10.0))
    assert pairs == 0 and "sure of its first match (confidence 0.930, at least 0.9)" in note and FUSED_ORDER in note
    assert gate == RerankGate(pair_ms=10.0)  # no cost measured, nothing starved
    assert decide(cfg=skipping, sure=0.99)[0] == 0  # a job too: the same answer on every path
    assert decide(cfg=skipping, budget_ms=150, sure=0.89, gate=RerankGate(pair_ms=10.0))[:2] == \
        (15, "reranked the top 15 of 20 within the 150 ms budget")
    assert decide(cfg=skipping, sure=None)[:2] == (20, None)  # no confidence: reranked
    assert decide(sure=0.99)[:2] == (20, None)  # no skip_at
    # the language gate speaks first: a head it refuses says why, not that it was sure
    assert "this post is es" in decide(cfg=skipping, reranker=English(), lang="es", sure=0.99)[1]


def test_a_starved_budget_keeps_the_fused_order_and_reprobes_after_a_while():
    gate = RerankGate(pair_ms=40.0)
    for i in range(1, REPROBE_AFTER):
        pairs, note, gate, _ = decide(gate, budget_ms=50)
        assert pairs == 0 and gate.starved == i
        assert f"fits fewer than {MIN_RERANK_PAIRS} pairs (~40 ms a pair measured)" in note
    pairs, _, gate, _ = decide(gate, budget_ms=50)
    assert pairs == 0 and gate == RerankGate()  # the cost is forgotten: the next match probes
    assert decide(gate, budget_ms=50)[0] == 2
    assert decide(RerankGate(pair_ms=40.0, starved=5), budget_ms=150)[2].starved == 0


def test_reorder_puts_the_head_in_the_reranker_s_order_and_keeps_the_tail():
    fused = head(4)
    out = reorder(fused, [0.1, 0.9], Rerank(model="m", top=2))
    assert [(f.id, f.rank) for f in out] == [("2", 1), ("1", 2), ("3", 3), ("4", 4)]
    assert fused[0].rank == 1  # inputs untouched
    # half the weight on the fused rank: a small reranker preference does not overturn it
    assert [f.id for f in reorder(fused, [0.4, 0.5], Rerank(model="m", top=2, weight=0.5))][:2] == ["1", "2"]


def test_the_cost_of_a_pair_is_measured_on_a_second_batch_of_the_head():
    from plugin.search.rerank_gate import measure_pair_ms

    class Slow:
        def __init__(self):
            self.now, self.calls = 0.0, []

        def score(self, query, passages):
            self.calls.append(len(passages))
            self.now += (2.0 if len(self.calls) == 1 else 0.09) * len(passages)  # the first pays start-up
            return [0.0] * len(passages)

    ce = Slow()
    assert measure_pair_ms(ce, 10, lambda: ce.now) == pytest.approx(90.0)
    assert ce.calls == [10, 10]


# -- the measured language gate -----------------------------------------------------------------
def _langs(*langs):
    return [Fused(id=str(i), score=1.0, rank=i,
                  contributions={"q": Hit(str(i), 1.0, i, "q", {"lang": lang} if lang else {})})
            for i, lang in enumerate(langs, start=1)]


GATE = {"rows": {
    "en": {"own": {"n": 80, "first_stage": 0.9, "reranked": 0.95, "rerank": True}},
    "ar": {"own": {"n": 70, "first_stage": 0.95, "reranked": 0.93, "rerank": False}},
    "*": {"own": {"n": 200, "first_stage": 0.7, "reranked": 0.75, "rerank": True}}}}


def test_a_head_crosses_when_its_first_candidate_is_in_another_language():
    from plugin.search.rerank_gate import head_kind

    assert head_kind("en", _langs("en", None, "en")) == "own"
    assert head_kind("en", _langs("en", "fr")) == "own"  # other languages below: still led by its own
    assert head_kind("en", _langs("fr", "en")) == "cross"
    assert head_kind("en", _langs(None, "fr")) == "own"  # no evidence the first one crosses
    assert head_kind(None, _langs("en")) == "cross" and head_kind(None, _langs(None)) == "own"
    assert head_kind("en", []) == "own"


def test_the_measured_gate_reranks_where_its_row_says_it_beat_the_first_stage_and_says_why_not_elsewhere():
    from plugin.search.rerank_gate import measured_gate

    assert measured_gate(GATE, "en", _langs("en", "en")) is None
    assert measured_gate(GATE, "en", _langs("en", "ko")) is None
    note = measured_gate(GATE, "ar", _langs("ar", "ar"))
    assert "did not beat the first stage on ar posts with a first candidate in their own language" in note
    assert "0.95 → 0.93 over 70" in note and note.endswith(FUSED_ORDER)
    # no row of its own: the pooled languages' row
    assert measured_gate(GATE, "sq", _langs("sq", "en")) is None
    # a first candidate in another language: no table here has such a row, so the fused order stays
    assert "not measured on en posts with a first candidate in another language" in \
        measured_gate(GATE, "en", _langs("ko", "en"))
    assert "not measured on sq posts with a first candidate in another language" in \
        measured_gate(GATE, "sq", _langs("en"))


def test_a_reranker_with_a_measured_gate_is_gated_by_it_and_one_without_by_its_languages():
    from plugin.search.rerank_gate import refusal

    class Measured:
        gate, languages = GATE, frozenset({"en"})

    class Listed:
        gate, languages = None, frozenset({"en"})

    assert refusal(Measured(), "en", _langs("en", "fr")) is None  # the table allows English-led heads
    assert "candidates include fr" in refusal(Listed(), "en", _langs("en", "fr"))
    cfg = RetrievalConfig.model_validate({"name": "r", "retrievers": [{"kind": "dense"}],
                                          "rerank": {"model": "m", "top": 2}})
    decided = RerankGate().decide(cfg, Measured(), asked=None, lang="ar", fused=_langs("ar", "ar"), budget_ms=None)
    assert decided.pairs == 0 and "did not beat" in decided.note


# -- cross heads: the rule measured on the post's own language ------------------------------------
CROSS = {**GATE, "cross_rule": {"min_probability": 0.98}}


def test_a_cross_head_is_reranked_only_where_the_table_has_the_cross_rule_and_trusts_the_language():
    from plugin.search.rerank_gate import cross_promotion, measured_gate

    assert cross_promotion(CROSS, "en", _langs("ko", "en")) == 0.98
    assert cross_promotion(CROSS, "sq", _langs("en", "sq")) == 0.98  # the pooled row reranks
    assert cross_promotion(CROSS, "en", _langs("en", "ko")) is None  # an own head: reorder as usual
    assert cross_promotion(CROSS, "ar", _langs("en", "ar")) is None  # ar's own heads are not reranked
    assert cross_promotion(GATE, "en", _langs("ko", "en")) is None  # no rule: fused order
    assert measured_gate(CROSS, "en", _langs("ko", "en")) is None
    assert "not measured" in measured_gate(CROSS, "ar", _langs("en", "ar"))

    class Measured:
        gate, languages = CROSS, None

    cfg = RetrievalConfig.model_validate({"name": "r", "retrievers": [{"kind": "dense"}],
                                          "rerank": {"model": "m", "top": 3}})
    decided = RerankGate().decide(cfg, Measured(), asked=None, lang="en", fused=_langs("ko", "en", "en"),
                                  budget_ms=None)
    assert decided.pairs == 3 and decided.promote_at == 0.98
    assert "only fact-checks in en the reranker gives at least 0.98 moved above it" in decided.note
    own = RerankGate().decide(cfg, Measured(), asked=None, lang="en", fused=_langs("en", "ko"), budget_ms=None)
    assert own.promote_at is None and own.note is None


def test_promote_sure_moves_only_sure_candidates_in_the_post_s_language_above_the_others():
    from plugin.search.rerank import promote_sure

    stage = Rerank(model="m", top=4)
    fused = _langs("ko", "en", "es", "en", "en")
    got = promote_sure(fused, [0.99, 0.5, 0.999, 0.99], "en", 0.98, stage)
    # "4" (en, 0.99) goes first; "3" (es) is sure too but in another language; "2" (en) is not sure
    assert [f.id for f in got] == ["4", "1", "2", "3", "5"] and [f.rank for f in got] == [1, 2, 3, 4, 5]
    assert [f.id for f in promote_sure(fused, [0.99, 0.97, 0.999, 0.5], "en", 0.98, stage)] == ["1", "2", "3", "4", "5"]
    both = promote_sure(fused, [0.1, 0.985, 0.2, 0.999], "en", 0.98, stage)
    assert [f.id for f in both] == ["4", "2", "1", "3", "5"]  # the sure ones in the reranker's order
