"""How far a sample pins the ECE down (``plugin.lab.calibrate.ece_spread``)."""
from __future__ import annotations

import numpy as np

from plugin.lab.calibrate import ece_spread


def test_a_small_sample_cannot_tell_a_calibrated_model_from_a_slightly_wrong_one():
    rng = np.random.default_rng(1)
    p = rng.uniform(0.3, 1.0, 160)
    y = (rng.random(160) < p).astype(float)  # calibrated by construction
    small = ece_spread(p, y, draws=300)
    lo, hi = small["ECE_95"]
    assert 0 <= lo < hi and hi - lo > 0.04  # wide at 160 matches
    assert 0.03 < small["ECE_floor"] < 0.1  # what a perfect model scores here, on average
    p2 = rng.uniform(0.3, 1.0, 20000)
    big = ece_spread(p2, (rng.random(20000) < p2).astype(float), draws=50)
    assert big["ECE_floor"] < 0.01 and big["ECE_95"][1] < 0.02
    assert ece_spread(p, y, draws=300) == small  # seeded: the same report every run
