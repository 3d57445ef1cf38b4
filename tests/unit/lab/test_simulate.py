import pytest

from plugin.errors import BadInput
from plugin.lab.simulate import Oracle, batch_bounds, own_indexes, score, sim_settings
from plugin.review.records import ReviewCandidate
from plugin.settings import Settings


def cands(*ids):
    return [ReviewCandidate(factcheck_id=i, rank=n) for n, i in enumerate(ids, 1)]


def test_the_oracle_confirms_a_shown_relevant_fact_check_else_answers_none():
    oracle = Oracle({"q1": {"b", "z"}}, shown=3)
    assert oracle.decide("q1", "p1", cands("a", "b", "c")) == {"post_id": "p1", "action": "confirm", "factcheck_id": "b"}
    assert oracle.decide("q1", "p1", cands("a", "c", "d", "b")) == {"post_id": "p1", "action": "none"}  # b not shown
    assert oracle.decide("q9", "p2", cands("a")) == {"post_id": "p2", "action": "none"}
    assert oracle.decide("q1", "p3", []) == {"post_id": "p3", "action": "none"}


def test_batch_bounds_cap_at_the_split():
    assert batch_bounds([100, 300, 1000], 141) == [100, 141]
    assert batch_bounds([50], 141) == [50]
    for bad in ([], [0], [300, 100], [100, 100]):
        with pytest.raises(BadInput, match="increasing positive counts"):
            batch_bounds(bad, 141)


def test_score_metrics_ece_and_the_tier():
    run = {"q1": [{"id": "a", "confidence": 0.9}, {"id": "b", "confidence": 0.1}],
           "q2": [{"id": "c", "confidence": 0.97}],
           "q3": [{"id": "d", "confidence": 0.3}],
           "q4": []}
    qrels = {"q1": {"a"}, "q2": {"x"}, "q3": {"d"}, "q4": {"e"}}
    out = score(run, qrels, threshold=0.95)
    assert out["S@1"] == 0.5 and out["MAP@5"] == 0.5
    assert out["auto_tier"] == {"threshold": 0.95, "precision": 0.0, "coverage": 0.25}
    assert out["ECE@1"] > 0
    assert score(run, qrels, None)["auto_tier"] == {"threshold": None, "precision": None, "coverage": 0.0}
    assert score({"q1": [{"id": "a"}]}, {"q1": {"a"}}, 0.5)["ECE@1"] is None  # no confidence model


def test_a_simulation_has_its_own_indexes_and_redis_namespace():
    base = Settings()
    sim = sim_settings(base, "t1", "eval-clef")
    assert sim.index == "eval-clef"
    assert sim.review_index == f"sim-t1-{base.review_index}" and sim.decisions_index.startswith("sim-t1-")
    assert sim.redis_prefix != base.redis_prefix
    assert set(own_indexes(sim)) >= {sim.review_index, sim.decisions_index, sim.jobs_index}
    assert base.index not in own_indexes(sim)


def test_a_simulation_renames_every_alias_a_post_writes():
    from plugin.lab.simulate import sim_settings
    from plugin.settings import POST_INDEXES, Settings

    base = Settings(_env_file=None)
    sim = sim_settings(base, "t1", "eval-x")
    for name in POST_INDEXES:
        assert getattr(sim, name) != getattr(base, name) and "t1" in getattr(sim, name), name
    assert set(POST_INDEXES) >= {n for n in Settings.model_fields if n in ("posts_index", "claims_index")}
