"""Cross-validated choice of one parameter (pure, hand-checkable tables)."""
from plugin.lab.evaluate.cv import cross_validate, folds_of


def test_folds_are_disjoint_complete_and_deterministic():
    ids = [f"q{i}" for i in range(11)]
    folds = folds_of(ids, 5, repeat=0)
    assert sorted(q for f in folds for q in f) == sorted(ids)
    assert [len(f) for f in folds] == [3, 2, 2, 2, 2]
    assert folds == folds_of(reversed(ids), 5, repeat=0)
    assert folds != folds_of(ids, 5, repeat=1)


def test_the_value_best_on_the_other_folds_is_scored_on_the_held_out_one():
    # value 1 is better on every query but q0, where 0 is much better
    scores = {0: {"q0": 1.0, "q1": 0.0, "q2": 0.0, "q3": 0.0},
              1: {"q0": 0.0, "q1": 1.0, "q2": 1.0, "q3": 1.0}}
    out = cross_validate(scores, folds=4, repeats=1)  # leave-one-out
    assert out["chosen"] == {"1": 4}                    # q0's fold still picks 1 (3 vs 1 elsewhere)
    assert out["held_out"] == {"mean": 0.75, "std": 0.433, "n": 4}
    assert out["all_queries"] == {"0": 0.25, "1": 0.75}


def test_each_fold_chooses_on_its_own_training_queries_and_ties_go_to_the_first_value():
    opposite = {0.5: {"a": 1.0, "b": 0.0}, 0.25: {"a": 0.0, "b": 1.0}}
    out = cross_validate(opposite, folds=2, repeats=1)
    assert out["chosen"] == {"0.25": 1, "0.5": 1} and out["held_out"]["mean"] == 0.0
    tied = {0.5: {"a": 1.0, "b": 1.0}, 0.25: {"a": 1.0, "b": 1.0}}
    assert cross_validate(tied, folds=2, repeats=1)["chosen"] == {"0.5": 2}
