"""The check-worthiness lab's pure parts: the metric, the fit, the out-of-fold choice."""
from __future__ import annotations

import numpy as np

from plugin.lab.checkworthiness import choose, fit_logistic, prf, scores_of


def test_prf_is_the_positive_class():
    y = np.array([True, True, False, False])
    out = prf(y, np.array([True, False, True, False]))
    assert (out["precision"], out["recall"], out["f1"], out["accuracy"]) == (0.5, 0.5, 0.5, 0.5)
    assert prf(y, np.array([False] * 4))["f1"] == 0.0


def test_the_fit_separates_separable_data_and_the_choice_finds_it():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 3))
    y = x[:, 0] + 0.1 * rng.normal(size=200) > 0.5
    w, b = fit_logistic(x, y, l2=1.0)
    assert prf(y, scores_of(x, w, b) >= 0.5)["f1"] > 0.9
    picked = choose(x, y)["chosen"]
    assert picked["f1"] > 0.9 and 0 < picked["threshold"] < 1
