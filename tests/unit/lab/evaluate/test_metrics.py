"""Metrics against hand-computed values."""
import pytest

from plugin.lab.evaluate.metrics import (average_precision_at_k, evaluate_run, percentile,
                                         recall_at_k, reciprocal_rank_at_k, success_at_k)

RANKED = ["a", "b", "c", "d", "e"]


@pytest.mark.parametrize("relevant, k, s, rr, r, ap", [
    ({"a"}, 10, 1.0, 1.0, 1.0, 1.0),
    ({"c"}, 10, 1.0, 1 / 3, 1.0, 1 / 3),
    ({"c"}, 2, 0.0, 0.0, 0.0, 0.0),
    ({"b", "d"}, 5, 1.0, 0.5, 1.0, (1 / 2 + 2 / 4) / 2),
    ({"b", "z"}, 5, 1.0, 0.5, 0.5, (1 / 2) / 2),
    ({"z"}, 5, 0.0, 0.0, 0.0, 0.0),
    (set(), 5, 0.0, 0.0, 0.0, 0.0),
])
def test_metric_table(relevant, k, s, rr, r, ap):
    assert success_at_k(RANKED, relevant, k) == s
    assert reciprocal_rank_at_k(RANKED, relevant, k) == pytest.approx(rr)
    assert recall_at_k(RANKED, relevant, k) == pytest.approx(r)
    assert average_precision_at_k(RANKED, relevant, k) == pytest.approx(ap)


def test_duplicates_in_a_run_count_once():
    assert average_precision_at_k(["a", "a", "b"], {"a", "b"}, 5) == pytest.approx((1 + 2 / 3) / 2)


def test_evaluate_run_means_and_missing_queries_score_zero():
    run = {"q1": ["x", "y"], "q2": ["z"]}
    qrels = {"q1": {"y"}, "q2": {"z"}, "q3": {"w"}}
    out = evaluate_run(run, qrels, ["S@1", "S@10", "MRR@10"])
    assert out == pytest.approx({"S@1": 1 / 3, "S@10": 2 / 3, "MRR@10": (0.5 + 1) / 3})


def test_evaluate_run_without_qrels():
    assert evaluate_run({}, {}, ["S@10"]) == {"S@10": 0.0}


@pytest.mark.parametrize("values, q, expected", [
    ([], 0.5, 0.0),
    ([7.0], 0.95, 7.0),
    ([3.0, 1.0, 2.0], 0.5, 2.0),
    ([1.0, 2.0, 3.0, 4.0], 0.5, 3.0),   # index round(1.5) = 2: a measured value, not 2.5
    ([float(i) for i in range(1, 101)], 0.95, 95.0),
    ([1.0, 2.0], 0.0, 1.0),
    ([1.0, 2.0], 1.0, 2.0),
])
def test_percentile_is_a_measured_value(values, q, expected):
    assert percentile(values, q) == expected
