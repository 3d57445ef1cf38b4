"""A confidence model gains a map for a language it was not fitted on, and keeps the rest."""
import numpy as np

from plugin.search.calibration import FEATURES, MIN_MATCHES, MIN_POSITIVES, fit_calibrator, with_language_maps


def _data(n, rate, seed, shift=0.0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, len(FEATURES)))
    y = (rng.random(n) < 1 / (1 + np.exp(-(x[:, 0] * 2 + shift)))).astype(float) if rate is None else \
        (rng.random(n) < rate).astype(float)
    return x, y


def test_a_language_with_enough_labelled_matches_gets_its_own_map_and_nothing_else_moves():
    x, y = _data(2000, None, 0)
    base = fit_calibrator("c", x, y, ["en"] * len(y), trained_on={"dataset": "clef"})
    xa, ya = _data(MIN_MATCHES + 100, None, 1, shift=-2.0)  # Arabic: far less often right at the same logit
    langs = ["ar"] * len(ya)
    langs[:5] = ["ko"] * 5  # too few to map
    cal, mapped = with_language_maps(base, xa, ya, langs, {"dataset": "clef2021"})
    assert mapped == ["ar"] and set(cal.isotonic) == set(base.isotonic) | {"ar"}
    assert cal.weights == base.weights and cal.isotonic["*"] == base.isotonic["*"]
    assert cal.trained_on["dataset"] == "clef" and cal.trained_on["languages"]["ar"]["dataset"] == "clef2021"
    assert cal.trained_on["languages"]["ar"]["matches"] == len(ya) - 5
    # the Arabic map follows the Arabic rate; English and unmapped languages keep the base's
    assert cal.predict(xa, "ar").mean() < base.predict(xa, "ar").mean()
    assert np.allclose(cal.predict(x, "en"), base.predict(x, "en"))
    assert np.allclose(cal.predict(xa, "ko"), base.predict(xa, "ko"))


def test_too_few_positives_map_nothing():
    x, y = _data(2000, None, 0)
    base = fit_calibrator("c", x, y, ["en"] * len(y))
    xa = np.zeros((MIN_MATCHES * 2, len(FEATURES)))
    ya = np.zeros(MIN_MATCHES * 2)
    ya[:MIN_POSITIVES - 1] = 1
    cal, mapped = with_language_maps(base, xa, ya, ["ar"] * len(ya), {})
    assert mapped == [] and cal.isotonic == base.isotonic
