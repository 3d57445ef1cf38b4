from types import SimpleNamespace

import pytest

from plugin.errors import DecisionConflict
from plugin.learn.calibrate import ALL, Recalibration
from plugin.learn.calibration_step import AUTO_ACTOR, auto_confirm
from plugin.learn.calibration_step import Recalibration as Step
from plugin.learn.calibration_store import packaged_sha256
from plugin.review.rules import TenantRules
from plugin.search.result import Match

MAP = Recalibration({ALL: {"top": (1.0, 1.0), "rest": (1.0, -1.0)}})


class Held:
    """A tenant → record table in memory (what ``Recalibrations`` reads from Redis)."""

    def __init__(self, **records):
        self.records = records

    def get(self, tenant):
        return self.records.get(tenant)

    def model(self, tenant):
        r = self.get(tenant)
        return (Recalibration.from_dict(r["params"]), r) if r else None


def record(threshold=None, calibrator="factsieve", sha=None):
    return {"params": MAP.to_dict(), "tier": {"threshold": threshold},
            "calibrator": {"name": calibrator, "sha256": sha or packaged_sha256(calibrator)}}


def result(*confs, config="factsieve", first=None):
    matches = [{"id": f"f{i}", "score": 0.1, "rank": i + 1, "confidence": c} for i, c in enumerate(confs)]
    if first:
        matches[0].update(first)
    return Match.from_dict({"lang": "en", "config": config, "matches": matches})


def test_a_tenant_with_a_recalibration_gets_its_confidence_and_the_packaged_one_beside_it():
    out = Step(Held(a=record())).apply("a", {}, result(0.5, 0.5)).to_dict()
    assert [m["confidence"] for m in out["matches"]] == [round(MAP.predict(0.5, "en", True), 4),
                                                         round(MAP.predict(0.5, "en", False), 4)]
    assert [m["confidence_packaged"] for m in out["matches"]] == [0.5, 0.5]


def test_a_second_pass_maps_the_packaged_confidence_again_not_its_own_output():
    step = Step(Held(a=record()))
    once = step.apply("a", {}, result(0.5))
    assert step.apply("a", {}, once) == once


@pytest.mark.parametrize("tenant, held, res", [
    ("b", record(), result(0.5)),                                   # no recalibration
    ("a", record(), result(None)),                                  # no confidence
    ("a", record(calibrator="other"), result(0.5)),                 # another calibrator's map
    ("a", record(sha="0" * 16), result(0.5)),                       # a retrained packaged one
])
def test_results_it_does_not_apply_to_are_left_alone(tenant, held, res):
    assert Step(Held(a=held)).apply(tenant, {}, res) is res


def test_a_match_the_desk_confirmed_is_left_alone():
    res = result(0.5, 0.4, first={"reason": "confirmed-by-desk", "confidence": 0.99})
    out = Step(Held(a=record())).apply("a", {}, res).to_dict()
    assert out["matches"][0] == res.to_dict()["matches"][0] and "confidence_packaged" in out["matches"][1]


class Desk:
    def __init__(self, error=None):
        self.calls, self.error = [], error

    def decide(self, tenant, actor, decisions, origin):
        self.calls.append((tenant, actor, decisions, origin))
        if self.error:
            raise self.error
        return [{"id": "dec1", "origin": origin}]


def services(auto=True, threshold=0.7, desk=None):
    return SimpleNamespace(review_rules=SimpleNamespace(for_tenant=lambda t: TenantRules(auto_confirm=auto)),
                           recalibrations=Held(a=record(threshold)), review=desk or Desk())


def confirm(svc, res):
    """``auto_confirm`` with the parts it uses: the desk, the review rules, the recalibrations."""
    return auto_confirm(svc.review, svc.review_rules, svc.recalibrations, "a", "p1", res)


def served(*confs):
    return Step(Held(a=record())).apply("a", {}, result(*confs))


def test_an_opted_in_tenant_above_its_tier_is_confirmed_by_the_auto_actor():
    svc = services()
    assert confirm(svc, served(0.9)) == {"id": "dec1", "origin": "auto"}
    assert svc.review.calls == [("a", AUTO_ACTOR, [{"post_id": "p1", "action": "confirm",
                                                    "factcheck_id": "f0"}], "auto")]


@pytest.mark.parametrize("svc, res", [
    (services(auto=False), served(0.9)),          # not opted in
    (services(threshold=None), served(0.9)),      # no tier
    (services(threshold=0.999), served(0.9)),     # below the tier
    (services(), result(0.99)),                   # not served by the tenant's map
    (services(), served()),                       # no matches
])
def test_no_auto_confirmation(svc, res):
    assert confirm(svc, res) is None and svc.review.calls == []


def test_an_item_already_decided_is_left_alone():
    svc = services(desk=Desk(DecisionConflict("already decided", decision=None)))
    assert confirm(svc, served(0.9)) is None and len(svc.review.calls) == 1
