"""Out-of-fold language maps (``calibrate --add-languages``' ``out_of_fold``; pure)."""
import numpy as np

from plugin.lab.calibrate import out_of_fold_maps
from plugin.search.calibration import Calibrator


def base():
    # the logit is the second feature (kNN similarity); the "*" map is the identity-ish step over [-5, 5]
    return Calibrator(config="t", mean=[0.0] * 5, std=[1.0] * 5, weights=[0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
                      isotonic={"*": {"x": [-5.0, 5.0], "y": [0.0, 1.0]}})


def test_each_post_is_predicted_by_maps_fitted_without_its_fold():
    rng = np.random.default_rng(0)
    n_posts, per = 400, 2
    z = rng.normal(0, 2, n_posts * per)
    x = np.zeros((len(z), 5)); x[:, 1] = z; x[:, 0] = np.tile([1.0, 0.5], n_posts)  # ranks 1 and 2
    y = (rng.random(len(z)) < 1 / (1 + np.exp(-(z - 1.0)))).astype(float)  # the "ar" truth is shifted
    data = {"x": x, "y": y, "lang": ["ar"] * len(z), "queries": n_posts,
            "post": [f"p{i // per}" for i in range(len(z))]}
    got = out_of_fold_maps(base(), data, folds=5)
    assert got["folds"] == 5 and got["mapped_in_folds"] == {"ar": 5}
    assert got["matches"] == len(z) and got["per_lang"]["ar"]["matches"] == len(z)
    # out of fold the fitted maps are far better calibrated than the base's map, yet not perfect
    from plugin.lab.calibrate import calibration_report
    assert got["ECE"] < calibration_report(base(), data)["ECE"]
    assert got["ECE"] > 0.0 and got["top1"]["matches"] == n_posts


def test_no_matches_no_report():
    assert out_of_fold_maps(base(), {"x": np.zeros((0, 5)), "y": np.zeros(0), "lang": [], "queries": 0, "post": []}) == \
        {"queries": 0, "matches": 0}
