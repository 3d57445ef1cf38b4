import math
from dataclasses import replace

import pytest

from plugin.errors import BadInput
from plugin.learn.calibrate import (
    ALL,
    IDENTITY,
    MIN_DECISIONS,
    MIN_PER_SIDE,
    Recalibration,
    fit_platt,
    fit_tenant,
    held_out,
    labelled,
    logit,
    sigmoid,
    teaching,
    top_outcome,
)
from plugin.learn.calibration_synthetic import TRUE_MAP, synthetic_decisions
from plugin.review.records import Action, Decision, Origin


def decision(action, fc=None, *, origin="desk", id_="d1", supersedes=None, confs=(0.8, 0.5, 0.2),
             lang="en"):
    return Decision.from_source({
        "id": id_, "post_id": "p1", "post_lang": lang, "action": action, "factcheck_id": fc,
        "origin": origin, "actor": "ana", "supersedes": supersedes, "at": "2026-01-01T00:00:00+00:00",
        "versions": {"calibrator": "factsieve"},
        "candidates": [{"factcheck_id": f"f{k + 1}", "rank": k + 1, "confidence": c}
                       for k, c in enumerate(confs)]})


def labels(d):
    return [(r.confidence, r.label, r.top) for r in labelled(d)]


@pytest.mark.parametrize("action, fc, expected", [
    ("confirm", "f2", [(0.8, 0, True), (0.5, 1, False), (0.2, 0, False)]),
    ("manual", "elsewhere", [(0.8, 0, True), (0.5, 0, False), (0.2, 0, False)]),
    ("reject", "f1", [(0.8, 0, True)]),
    ("reject", None, [(0.8, 0, True), (0.5, 0, False), (0.2, 0, False)]),
    ("none", None, [(0.8, 0, True), (0.5, 0, False), (0.2, 0, False)]),
    ("not_a_claim", None, []),
])
def test_labels_of_each_action(action, fc, expected):
    assert labels(decision(action, fc)) == expected


def test_the_packaged_confidence_is_learned_from_not_the_recalibrated_one():
    d = decision("confirm", "f1")
    first, *rest = d.candidates
    d = replace(d, candidates=(replace(first, confidence=0.99, confidence_packaged=0.6), *rest))
    assert labels(d)[0] == (0.6, 1, True)


def test_auto_undone_and_not_a_claim_decisions_teach_nothing():
    log = [decision("confirm", "f1", id_="a"), decision("undo", id_="b", supersedes="a"),
           decision("confirm", "f1", id_="c", origin="auto"), decision("not_a_claim", id_="d"),
           decision("none", id_="e")]
    kept, claimless, left = teaching(log)
    assert [d.id for d in kept] == ["e"] and [d.id for d in claimless] == ["d"]
    assert left == {"undone": 1, "undo": 1, "auto": 1, "not_a_claim": 1}


@pytest.mark.parametrize("action, fc, expected", [
    ("confirm", "f1", (0.8, 1, "en")), ("confirm", "f2", (0.8, 0, "en")),
    ("none", None, (0.8, 0, "en")), ("not_a_claim", None, (0.8, 0, "en")),
    ("reject", "f2", None), ("reject", "f1", (0.8, 0, "en")),
])
def test_the_top_candidate_outcome_for_the_tier(action, fc, expected):
    assert top_outcome(decision(action, fc)) == expected


def test_platt_recovers_a_known_map_and_the_prior_pulls_toward_identity():
    xs = [x / 10 for x in range(-40, 41)]
    # the expected label at each x, as fractional labels: the exact MLE is (2, -1)
    ys = [sigmoid(2 * x - 1) for x in xs]
    a, b = fit_platt(xs * 50, ys * 50, strength=1e-6)
    assert abs(a - 2) < 1e-3 and abs(b + 1) < 1e-3
    a_few, _ = fit_platt(xs[::8], ys[::8])
    assert 1.0 < a_few < a  # few decisions: shrunk toward the packaged model
    assert fit_platt([0.0, 1.0], [0, 1], strength=1e9) == pytest.approx(IDENTITY, abs=1e-6)


def test_recalibration_predicts_by_language_and_part():
    r = Recalibration({ALL: {"top": (1.0, 0.0), "rest": (1.0, -1.0)}, "es": {"top": (2.0, 0.0), "rest": (1.0, 0.0)}})
    assert r.predict(0.5, "en", True) == pytest.approx(0.5)
    assert r.predict(0.5, "en", False) == pytest.approx(sigmoid(-1.0))
    assert r.predict(0.7, "es", True) == pytest.approx(sigmoid(2 * logit(0.7)))
    assert Recalibration.from_dict(r.to_dict()) == r


def test_held_out_is_a_stable_share_of_posts():
    share = sum(held_out(f"post-{i}") for i in range(10000)) / 10000
    assert 0.28 < share < 0.32 and held_out("post-7") == held_out("post-7")


def test_a_refit_improves_held_out_calibration_of_a_miscalibrated_tenant():
    fit = fit_tenant(synthetic_decisions(1000), "t")
    assert fit.ece["after"] < fit.ece["before"] / 3
    assert fit.ece["at_1_after"] < fit.ece["at_1_before"]
    top_a, top_b = fit.recalibration.params[ALL]["top"]
    assert 1.0 < top_a <= TRUE_MAP[0] + 0.3 and top_b < 0
    assert set(fit.per_language) == {"en", "es"} and fit.calibrator == "factsieve"
    assert fit.decisions_until == "2026-01-01T16:39:00.000+00:00"
    assert fit.counts["held_out_decisions"] + fit.counts["decisions"] - fit.counts["held_out_decisions"] \
        == fit.counts["decisions"] and fit.counts["left_out_not_a_claim"] > 0


def test_a_fit_is_deterministic():
    log = synthetic_decisions(300, seed=3)
    assert fit_tenant(log).recalibration.to_dict() == fit_tenant(list(reversed(log))).recalibration.to_dict()


def test_too_few_decisions_are_refused():
    with pytest.raises(BadInput, match=f"at least {MIN_DECISIONS}"):
        fit_tenant(synthetic_decisions(MIN_DECISIONS - 10), "t")


@pytest.mark.parametrize("only", ["confirm", "none"])
def test_one_sided_decisions_are_refused(only):
    with pytest.raises(BadInput, match="one-sided.*both kinds are needed"):
        fit_tenant(synthetic_decisions(200, only=only), "t")


def test_a_log_whose_top_candidate_is_almost_always_right_is_refused():
    log = synthetic_decisions(200, seed=4, only="confirm")
    # every confirm on the top candidate, bar a few "none"
    log = [replace(d, factcheck_id=d.candidates[0].factcheck_id) for d in log]
    log = [replace(d, action=Action.NONE, factcheck_id=None) for d in log[: MIN_PER_SIDE - 1]] \
        + log[MIN_PER_SIDE - 1:]
    with pytest.raises(BadInput, match=f"right in {200 - MIN_PER_SIDE + 1} posts and wrong in "
                                       f"{MIN_PER_SIDE - 1}; at least {MIN_PER_SIDE} of each"):
        fit_tenant(log, "t")


def test_decisions_without_confidence_are_refused():
    log = [replace(d, versions={"calibrator": None}) for d in synthetic_decisions(100)]
    with pytest.raises(BadInput, match="no decisions on calibrated matches"):
        fit_tenant(log, "t")


def test_auto_decisions_do_not_count():
    log = [replace(d, origin=Origin.AUTO) for d in synthetic_decisions(200)]
    with pytest.raises(BadInput):
        fit_tenant(log, "t")


def test_logit_is_clipped_to_the_packaged_range():
    assert math.isfinite(logit(0.0)) and math.isfinite(logit(1.0))


def test_the_publics_tipline_feedback_is_weighed_below_a_reviewers():
    from plugin.learn.calibrate import TIPLINE_WEIGHT, public_feedback

    said = decision("confirm", "f1", id_="t", origin="tipline")
    kept, _, left = teaching([said, decision("none", id_="e")])
    assert [d.id for d in kept] == ["e"] and left["tipline"] == 1  # not a reviewer's decision
    assert public_feedback([said]) == [said]
    assert {r.weight for r in labelled(said)} == {TIPLINE_WEIGHT} and {r.weight for r in labelled(kept[0])} == {1.0}
    # a weight is a count: a row weighed 2 fits as the row twice
    x, y = [0.1, 0.5, -0.3, 2.0], [0, 1, 0, 1]
    twice = fit_platt(x + x[:1], y + y[:1])
    weighed = fit_platt(x, y, weights=[2.0, 1.0, 1.0, 1.0])
    assert twice == pytest.approx(weighed, abs=1e-9)
    # contradicting feedback moves the fit, less than the same as a reviewer's would
    log = synthetic_decisions(600)
    flipped = [replace(d, id=f"{d.id}-t", origin=Origin.TIPLINE, action=Action.REJECT, factcheck_id=None)
               for d in log if d.action is Action.CONFIRM]
    base, public = fit_tenant(log, "t"), fit_tenant(log + flipped, "t")
    as_desk = fit_tenant(log + [replace(d, origin=Origin.DESK) for d in flipped], "t")
    a0, a1, a2 = (f.recalibration.params[ALL]["top"][1] for f in (base, public, as_desk))
    assert a2 < a1 < a0  # each reject pulls the top map's intercept down; the public's by less
    assert public.counts["tipline_decisions"] == len(flipped) and public.counts["decisions"] == base.counts["decisions"]
