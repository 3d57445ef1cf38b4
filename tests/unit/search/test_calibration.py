"""Calibrated confidence (pure: hand-checked numbers)."""
import numpy as np
import pytest

from plugin.models import Fused, Hit
from plugin.search.calibration import (FEATURES, Calibrator, candidate_features,
                                       expected_calibration_error, fit_calibrator, fit_isotonic,
                                       fit_logistic, load_calibrator)


def test_isotonic_pools_adjacent_violators():
    xs, ys = fit_isotonic(np.array([1.0, 2.0, 3.0, 4.0]), np.array([0, 1, 0, 1]))
    assert xs == [1.0, 2.0, 3.0, 4.0] and ys == [0.0, 0.5, 0.5, 1.0]
    xs, ys = fit_isotonic(np.array([3.0, 1.0, 2.0]), np.array([1, 0, 0]))  # unsorted input
    assert (xs, ys) == ([1.0, 2.0, 3.0], [0.0, 0.0, 1.0])


def test_logistic_regression_finds_the_direction():
    x = np.array([[-2.0], [-1.0], [-0.5], [0.5], [1.0], [2.0]])
    y = np.array([0, 0, 1, 0, 1, 1])
    w = fit_logistic(x, y)
    assert w[1] > 0 and abs(w[0]) < 0.5


def test_ece_by_hand():
    assert expected_calibration_error([0.1, 0.9], [0, 1]) == pytest.approx(0.1)  # 0.5·0.1 + 0.5·0.1
    assert expected_calibration_error([0.5, 0.5], [0, 1]) == pytest.approx(0.0)
    assert expected_calibration_error([1.0], [0]) == pytest.approx(1.0)  # 1.0 falls in the top bin
    assert expected_calibration_error([], []) == 0.0


def fused(doc, rank, dense=None, bm25=None, lang="en"):
    src = {"lang": lang}
    hits = {}
    if dense is not None:
        hits["dense:post"] = Hit(doc, dense[1], dense[0], "dense:post", src)
    if bm25 is not None:
        hits["bm25:post"] = Hit(doc, 7.0, bm25, "bm25:post", src)
    return Fused(id=doc, score=0.0, rank=rank, contributions=hits)


def test_candidate_features_by_hand():
    cands = [fused("a", 1, dense=(1, 0.95), bm25=2), fused("b", 2, dense=(2, 0.90), lang="ko"),
             fused("c", 3, bm25=1)]
    rows = candidate_features(cands, cands[:2], "en")
    assert FEATURES == ("inv_rank", "dense_sim", "bm25_inv_rank", "dense_margin", "same_lang")
    np.testing.assert_allclose(rows[0], [1.0, 0.95, 0.5, 0.05, 1.0])
    np.testing.assert_allclose(rows[1], [0.5, 0.90, 0.0, -0.05, 0.0])
    assert candidate_features(cands, [], "en").shape == (0, len(FEATURES))


def test_fit_predict_round_trip_and_per_language_curves(tmp_path):
    rng = np.random.default_rng(0)
    n = 800
    x = rng.normal(size=(n, len(FEATURES)))
    y = (x[:, 1] + 0.3 * rng.normal(size=n) > 0.5).astype(float)
    langs = ["en"] * 600 + ["es"] * 200
    cal = fit_calibrator("factsieve", x, y, langs)
    assert set(cal.isotonic) == {"*", "en"}  # es: fewer than MIN_MATCHES matches
    p = cal.predict(x, "en")
    assert p.min() >= 0.001 and p.max() <= 0.999
    assert expected_calibration_error(p[:600], y[:600]) < 0.05  # in-sample isotonic: near zero
    assert np.corrcoef(p, x[:, 1])[0, 1] > 0.5
    path = tmp_path / "factsieve.json"
    import json
    path.write_text(json.dumps(cal.to_dict()))
    again = load_calibrator("factsieve", path)
    np.testing.assert_allclose(again.predict(x, "es"), cal.predict(x, "es"))  # es: the "*" curve
    assert load_calibrator("factsieve", tmp_path / "missing.json") is None
    with pytest.raises(ValueError, match="features"):
        Calibrator.from_dict({**cal.to_dict(), "features": ["score"]})


def test_the_packaged_calibrator_loads():
    cal = load_calibrator("factsieve")
    assert cal is not None and cal.trained_on["split"] == "train"


def test_threshold_table_by_hand():
    from plugin.lab.calibrate import thresholds

    got = thresholds(np.array([0.95, 0.85, 0.4]), np.array([1.0, 0.0, 1.0]), findable=3, at=(0.5, 0.9, 0.99))
    assert got["0.9"] == {"precision": 1.0, "recall": 0.3333, "answered": 1}
    assert got["0.5"] == {"precision": 0.5, "recall": 0.3333, "answered": 2}
    assert got["0.99"] == {"precision": None, "recall": 0.0, "answered": 0}


def test_a_config_whose_query_tower_saw_the_training_queries_is_fitted_out_of_fold_only(tmp_path):
    """Fitting confidence on the queries the tower trained on would make it sure too often: the
    command refuses before it touches the cluster, and names the fix."""
    from plugin.lab.calibrate import calibrate
    from plugin.learn.train.datasets import Dataset
    from plugin.search.retrieval import RetrievalConfig
    from plugin.settings import Settings

    dataset = Dataset(name="d", path=tmp_path, queries=[{"id": "1", "text": "t", "split": "train"}],
                      qrels={"all": {"1": {"a"}}, "mono": {}, "cross": {}}, n_factchecks=1)
    config = RetrievalConfig.model_validate({"name": "t", "retrievers": [{"kind": "dense"}],
                                             "query_encoder": "claims"})
    with pytest.raises(ValueError, match="--cross-fit"):
        calibrate(None, None, Settings(), dataset, config, out=tmp_path / "c.json")


def test_a_reranking_configuration_is_scored_by_the_calibrator_it_names():
    """``hybrid-rerank`` names its first stage's confidence model; the others use their own."""
    from plugin.search.matcher import Matcher
    from plugin.search.retrieval import retrieval_config
    from plugin.settings import Settings

    assert retrieval_config("hybrid-rerank").calibrator == "factsieve"
    matcher = Matcher(store=None, embedder=None, settings=Settings(), config="factsieve")
    own = matcher.calibrator_for(retrieval_config("factsieve"))
    assert own is not None and matcher.calibrator_for(retrieval_config("hybrid-rerank")) is own
    assert matcher.calibrator_for(retrieval_config("bm25")) is None
