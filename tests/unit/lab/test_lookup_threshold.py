"""The lookup-threshold measurement's pure parts, against hand-computed values."""
from datetime import date

import pytest

from plugin.lab.excluding import ExcludingMatcher, claim_words, duplicates_of, exclude_ids
from plugin.lab.lookup_threshold import collect_clef, eval_queries, first_match, summarise
from plugin.lab.threshold import choose_threshold, config_threshold, distribution, operating_point
from plugin.models import Mode
from plugin.search.matcher import MatchRequest, MatchResult, same_claim
from plugin.search.queries import Filters, bm25_query, filter_query, knn_query
from plugin.settings import Settings
from tests.stub_embedder import StubEmbedder

POS = [0.9, 0.8, 0.7]
NEG = [0.75, 0.6]


# -- operating points and the chosen threshold --------------------------------------------------------
@pytest.mark.parametrize("t, answered, correct, wrong, precision, recall", [
    (0.6, 5, 3, 2, 3 / 5, 1.0),
    (0.7, 4, 3, 1, 3 / 4, 1.0),
    (0.75, 3, 2, 1, 2 / 3, 2 / 3),
    (0.8, 2, 2, 0, 1.0, 2 / 3),
    (0.9, 1, 1, 0, 1.0, 1 / 3),
    (0.95, 0, 0, 0, 1.0, 0.0),  # nothing answered: no error made
])
def test_operating_point_table(t, answered, correct, wrong, precision, recall):
    point = operating_point(POS, NEG, t)
    assert (point["answered"], point["correct"], point["wrong"]) == (answered, correct, wrong)
    assert point["precision"] == pytest.approx(precision)
    assert point["recall"] == pytest.approx(recall)


def test_recall_counts_against_n_positive():
    # 3 right answers out of 6 covered claims (the other 3 had a wrong first match)
    assert operating_point(POS, NEG, 0.7, n_positive=6)["recall"] == pytest.approx(0.5)


@pytest.mark.parametrize("min_precision, threshold, precision, recall", [
    (0.95, 0.8, 1.0, 2 / 3),   # 0.75 lets the 0.75 negative in (2/3); 0.8 is the first at 1.0
    (0.7, 0.7, 0.75, 1.0),     # 3 of 4 at 0.7
    (0.6, 0.6, 0.6, 1.0),      # everything answered: 3 of 5
])
def test_choose_threshold_is_the_lowest_reaching_the_precision(min_precision, threshold, precision, recall):
    out = choose_threshold(POS, NEG, min_precision=min_precision)
    assert out["threshold"] == threshold
    assert out["precision"] == pytest.approx(precision)
    assert out["recall"] == pytest.approx(recall)
    assert (out["n_positive"], out["n_negative"], out["min_precision"]) == (3, 2, min_precision)


def test_choose_threshold_takes_the_lowest_even_when_precision_dips_above_it():
    # at 0.5: 2 of 3 (0.67 ≥ 0.6); at 0.6: 1 of 2 (0.5); at 0.9: 0 of 1
    out = choose_threshold([0.5, 0.6], [0.9], min_precision=0.6)
    assert out["threshold"] == 0.5
    assert out["precision"] == pytest.approx(2 / 3)


def test_choose_threshold_none_when_no_score_qualifies():
    out = choose_threshold([0.1], [0.9], min_precision=0.95)
    assert out["threshold"] is None and out["recall"] == 0.0 and out["precision"] is None


def test_choose_threshold_needs_a_right_answer():
    assert choose_threshold([], [0.4, 0.5])["threshold"] is None


def test_choose_threshold_curve_at_nearest_rank_quantiles():
    # pooled sorted: 0.6 0.7 0.75 0.8 0.9 → q0.5 is index 2 (0.75), q0.9 index round(3.6) = 4 (0.9)
    curve = choose_threshold(POS, NEG, quantiles=(0.0, 0.5, 0.9))["curve"]
    assert [c["threshold"] for c in curve] == [0.6, 0.75, 0.9]
    assert [c["quantile"] for c in curve] == [0.0, 0.5, 0.9]
    assert curve[1]["precision"] == pytest.approx(2 / 3)


@pytest.mark.parametrize("bad", [0.0, 1.5, -1])
def test_choose_threshold_rejects_a_precision_outside_0_1(bad):
    with pytest.raises(ValueError, match="min_precision"):
        choose_threshold(POS, NEG, min_precision=bad)


@pytest.mark.parametrize("pos, neg, t, expected", [
    ([0.9351, 0.96], [0.90], 0.9351, 0.935),   # rounded down: no negative slips in
    ([0.9351, 0.96], [0.9350], 0.9351, 0.936),  # 0.935 lets the negative in (2 of 3): up a step
    ([0.9351, 0.96], [0.9350, 0.9355], 0.9351, 0.936),  # 0.936: only 0.96 left, 1 of 1
    ([0.9], [0.5], 0.9, 0.9),
])
def test_config_threshold(pos, neg, t, expected):
    assert config_threshold(pos, neg, t, min_precision=0.95, digits=3) == pytest.approx(expected)


def test_config_threshold_four_digits_by_default():
    assert config_threshold([0.94797, 0.96], [0.9479], 0.94797, min_precision=0.95) == pytest.approx(0.948)
    assert config_threshold([0.94797, 0.96], [0.94], 0.94797, min_precision=0.95) == pytest.approx(0.9479)


def test_distribution_nearest_rank():
    scores = [float(i) for i in range(11)]  # 0..10: p10 = 1, p50 = 5, p90 = 9
    assert distribution(scores) == {"n": 11, "p10": 1.0, "p50": 5.0, "p90": 9.0, "min": 0.0, "max": 10.0}
    assert distribution([]) == {"n": 0}


# -- dataset and match reading --------------------------------------------------------------------------
def test_eval_queries_leave_out_training_and_unjudged():
    queries = [{"id": 1, "split": "train"}, {"id": 2, "split": "dev"}, {"id": 3, "split": "test"},
               {"id": 4, "split": "dev"}, {"id": 5}]
    qrels = {"1": {"a"}, "2": {"b"}, "3": {"c"}, "5": {"e"}}
    assert [q["id"] for q in eval_queries(queries, qrels)] == [2, 3, 5]


CLAIMS = {
    "1": 'Louis Vuitton sponsored "human zoos" in the late 1800s.',
    "2": "Louis Vuitton sponsored 'human zoos' in the late 1800s.",   # the same, other quotes
    "3": "Louis Vuitton sponsored zoos.",                             # 3 of 8 words: not a copy
    "4": "The Great Wall of China is visible from the Moon.",
    "5": "",
}


@pytest.mark.parametrize("ids, expected", [
    ({"1"}, {"1", "2"}),
    ({"2"}, {"1", "2"}),
    ({"3"}, {"3"}),
    ({"4", "1"}, {"1", "2", "4"}),
    ({"5"}, {"5"}),          # an empty claim duplicates nothing
    ({"99"}, {"99"}),        # an id the corpus lacks stays, alone
])
def test_duplicates_of(ids, expected):
    assert duplicates_of(ids, claim_words(CLAIMS)) == expected


def test_duplicates_agree_with_same_claim():
    words = claim_words(CLAIMS)
    for a in CLAIMS:
        for b in CLAIMS:
            if a != b:
                assert (b in duplicates_of({a}, words, threshold=0.8)) == same_claim(CLAIMS[a], CLAIMS[b], 0.8)


def _result(*matches):
    return MatchResult(lang="en", matches=list(matches), took_ms=1.0)


def test_first_match_reads_the_knn_score_not_the_fused_one():
    m = {"id": "7", "score": 0.048, "explain": {"bm25:post": {"rank": 1, "score": 12.3},
                                               "dense:post": {"rank": 1, "score": 0.941}}}
    assert first_match(_result(m, {"id": "8", "score": 0.04, "explain": {}})) == \
        {"id": "7", "similarity": 0.941, "score": 0.048}
    assert first_match(_result()) == {"id": None, "similarity": None, "score": None}


def test_first_match_without_a_knn_score_fails_loudly():
    from plugin.errors import FactSieveError

    with pytest.raises(FactSieveError, match="no kNN score"):
        first_match(_result({"id": "7", "score": 0.5, "explain": {"hybrid": {"rank": 1, "score": 0.5}}}))


def _row(qid, first_id, sim, relevant, removed_sim):
    return {"id": qid, "relevant": [relevant], "first_relevant": first_id == relevant,
            "first": {"id": first_id, "similarity": sim, "score": 0.05},
            "removed": {"id": "x", "similarity": removed_sim, "score": 0.04}}


def test_summarise_splits_the_cases():
    clef = [_row("1", "a", 0.95, "a", 0.90), _row("2", "b", 0.94, "b", 0.91),
            _row("3", "z", 0.93, "c", 0.92), _row("4", "d", 0.92, "d", 0.89)]
    other = [{"id": "v", "first": {"id": "q", "similarity": 0.91, "score": 0.04}, "covered": False},
             {"id": "w", "first": {"id": "r", "similarity": 0.935, "score": 0.04}, "covered": True}]
    out = summarise(clef, other, min_precision=0.95)
    assert out["distributions"]["positives"]["n"] == 3
    assert out["distributions"]["wrong_first_match"] == {"n": 1, "p10": 0.93, "p50": 0.93, "p90": 0.93,
                                                        "min": 0.93, "max": 0.93}
    assert out["distributions"]["relevant_removed"]["n"] == 4
    assert out["S@1"] == 0.75 and out["S@1_qrels_only"] == 0.75 and out["queries_with_duplicates"] == 0
    # the AVeriTeC negative (0.91) sits below 0.94 either way; at 0.9 precision 0.93 gives 2 of 3
    assert out["alternatives"]["clef_only@0.95"]["threshold"] == 0.94
    assert out["alternatives"]["all@0.9"]["threshold"] == 0.94
    # "all" counts the covered 0.935 claim as a negative (0.935: 2 of 3, so 0.94 stays);
    # "read" as a right answer: at 0.93, 3 right of 4 (the 0.93 wrong first match); at 0.935,
    # 3 of 3 — recall 3 of the 4 covered tweets + 1 covered claim
    assert out["alternatives"]["read@0.95"]["threshold"] == 0.935
    assert out["alternatives"]["read@0.95"]["recall"] == pytest.approx(3 / 5)
    assert out["averitec_covered_by_reading"] == 1
    # 0.94 is the lowest with no negative above it: 2 right of 4 covered tweets
    assert out["chosen"]["threshold"] == 0.94
    assert out["chosen"]["recall"] == 0.5
    assert out["config_value"] == 0.94
    assert out["at_config_value"]["answered_share"] == {"wrong_first_match": 0.0,
                                                        "relevant_removed": 0.0, "averitec": 0.0}


def _m(i, sim):
    return {"id": i, "score": 0.05, "explain": {"dense:post": {"rank": 1, "score": sim}}}


class ScriptedMatcher:
    """First matches by call: with everything indexed, then without the excluded ids."""

    def __init__(self, full, removed):
        self.full, self.removed, self.excluded = full, removed, []

    def match(self, req):
        return _result(self.full)

    def match_without(self, req, ids):
        self.excluded.append(set(ids))
        return _result(self.removed)


def test_collect_clef_counts_a_duplicate_first_match_as_an_answer_and_removes_it_too():
    matcher = ScriptedMatcher(_m("2", 0.96), _m("4", 0.91))
    rows = collect_clef(matcher, [{"id": "q", "text": "zoos"}], {"q": {"1"}}, claim_words(CLAIMS))
    assert matcher.excluded == [{"1", "2"}]
    row = rows[0]
    assert row["first_relevant"] is True and row["first_in_qrels"] is False
    assert row["answers"] == ["1", "2"] and row["removed"]["similarity"] == 0.91
    # without the corpus, only the qrels answer
    plain = collect_clef(ScriptedMatcher(_m("2", 0.96), _m("4", 0.91)), [{"id": "q", "text": "zoos"}],
                         {"q": {"1"}})
    assert plain[0]["first_relevant"] is False


# -- excluding fact-checks from the sub-queries -------------------------------------------------------------
FLT = filter_query(Filters(langs=("en",), published_before=date(2020, 1, 1)))


@pytest.mark.parametrize("body", [
    bm25_query("the moon", lang="en", filters=None, size=10),
    bm25_query("the moon", lang="en", filters=FLT, size=10),
])
def test_exclude_ids_bm25(body):
    out = exclude_ids(body, ["a", "b"])
    assert out["query"]["bool"]["must_not"] == [{"ids": {"values": ["a", "b"]}}]
    assert out["query"]["bool"]["must"] == body["query"]["bool"]["must"]
    assert out["query"]["bool"].get("filter") == body["query"]["bool"].get("filter")
    assert "must_not" not in body["query"]["bool"]  # the input is left alone


def test_exclude_ids_knn_without_and_with_a_filter():
    plain = exclude_ids(knn_query([0.1, 0.2], filters=None, size=5), ["a"])
    assert plain["query"]["knn"]["embedding"]["filter"] == {"bool": {"must_not": [{"ids": {"values": ["a"]}}]}}
    body = knn_query([0.1, 0.2], filters=FLT, size=5)
    out = exclude_ids(body, ["a"])
    assert out["query"]["knn"]["embedding"]["filter"] == {
        "bool": {"filter": [FLT], "must_not": [{"ids": {"values": ["a"]}}]}}
    assert body["query"]["knn"]["embedding"]["filter"] == FLT
    assert out["query"]["knn"]["embedding"]["k"] == 5


def test_exclude_nothing_is_a_copy():
    body = knn_query([0.1], filters=None, size=5)
    assert exclude_ids(body, []) == body


def test_excluding_matcher_plan_excludes_only_during_the_call():
    matcher = ExcludingMatcher(store=None, embedder=StubEmbedder(lambda _: [1.0, 0.0, 0.0]), settings=Settings(),
                                config="factsieve")
    req = MatchRequest(text="the great wall", mode=Mode.AUTO, k=5)
    plain, _ = matcher.plan(req, "the great wall", "en", matcher.config)
    seen = {}

    def fake_match(request):
        seen["bodies"], _w = matcher.plan(request, "the great wall", "en", matcher.config)
        return _result()

    matcher.match = fake_match
    matcher.match_without(req, {"b", "a"})
    clause = {"ids": {"values": ["a", "b"]}}
    assert clause in seen["bodies"]["bm25:post"]["query"]["bool"]["must_not"]
    assert clause in seen["bodies"]["dense:post"]["query"]["knn"]["embedding"]["filter"]["bool"]["must_not"]
    after, _ = matcher.plan(req, "the great wall", "en", matcher.config)
    assert after == plain
