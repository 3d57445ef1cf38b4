"""Choosing ``rerank.rank_prior`` out of fold: the pure half (orders and the grid)."""
import pytest

from plugin.errors import BadInput
from plugin.lab.reranker.prior import Head, prior_grid, prior_order


def test_prior_order_trades_the_rerankers_margin_against_the_fused_rank():
    # logits 0, 1, 3 at fused ranks 1, 2, 3; with prior 2: 0, 1 − 2·ln 2 = −0.386, 3 − 2·ln 3 = 0.803
    head = Head("q", 0, ("a", "b", "c", "d"), (0.0, 1.0, 3.0))
    assert prior_order(head, 0.0) == ["c", "b", "a", "d"]  # the reranker's own order; d not reranked
    assert prior_order(head, 2.0) == ["c", "a", "b", "d"]
    assert prior_order(head, 10.0) == ["a", "b", "c", "d"]  # the first stage's order
    # a tie keeps the fused order
    assert prior_order(Head("q", 0, ("a", "b"), (1.0, 1.0)), 0.0) == ["a", "b"]


def test_prior_grid_scores_each_prior_over_all_folds_and_picks_the_best():
    heads = [Head("1", 0, ("x", "g1"), (0.0, 1.0)),   # the reranker is right by a little
             Head("2", 1, ("g2", "y"), (0.0, 0.5))]   # the reranker is wrong by less
    qrels = {"1": {"g1"}, "2": {"g2"}}
    out = prior_grid(heads, qrels, [0.0, 1.0, 2.0])
    by = {r["rank_prior"]: r for r in out["grid"]}
    # prior 0: 1 right, 2 at rank 2 → MAP@5 (1 + 0.5) / 2; prior 1 (ln 2 = 0.69): 1 − 0.69 > 0 keeps
    # g1 first and 0.5 − 0.69 < 0 keeps g2 first → 1.0; prior 2: both in fused order → 0.75
    assert [by[p]["MAP@5"] for p in (0.0, 1.0, 2.0)] == [0.75, 1.0, 0.75]
    assert by[1.0]["MAP@5_per_fold"] == [1.0, 1.0] and by[0.0]["MAP@5_fold_sd"] == 0.25
    assert out["best"] == 1.0 and out["first_stage"]["MAP@5"] == 0.75
    assert out["posts"] == 2 and out["folds"] == 2
    with pytest.raises(BadInput, match="no out-of-fold"):
        prior_grid([], qrels, [0.0])
