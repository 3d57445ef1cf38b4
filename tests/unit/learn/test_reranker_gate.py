"""The champion/challenger gate (pure)."""
from __future__ import annotations

import pytest

from plugin.learn.reranker_gate import (MAX_LANGUAGE_DROP, MIN_GAIN, average_precision_at_5, decide,
                                        map_at_5)


@pytest.mark.parametrize(("scores", "ap"), [
    ([2.0, 1.0, 3.0], 0.5), ([3.0, 1.0], 1.0), ([1.0, 1.0], 0.5),  # a tie counts against it
    ([0.0, 1, 2, 3, 4], 0.2), ([0.0, 1, 2, 3, 4, 5], 0.0)])
def test_average_precision_at_5(scores, ap) -> None:
    assert average_precision_at_5(scores) == pytest.approx(ap)


def test_map_at_5_overall_and_per_language() -> None:
    got = map_at_5([("en", [2, 1]), ("en", [1, 2]), ("es", [0, 1, 2])])
    assert got == {"MAP@5": round((1 + 0.5 + 1 / 3) / 3, 4), "groups": 3,
                   "per_language": {"en": {"MAP@5": 0.75, "groups": 2},
                                    "es": {"MAP@5": 0.3333, "groups": 1}}}


def scores(overall: float, **langs: float) -> dict:
    return {"MAP@5": overall, "groups": 10,
            "per_language": {k: {"MAP@5": v, "groups": 5} for k, v in langs.items()}}


@pytest.mark.parametrize(("champion", "challenger", "promote"), [
    (scores(0.70, en=0.7), scores(0.70 + MIN_GAIN, en=0.705), True),   # exactly the gain
    (scores(0.70, en=0.7), scores(0.704, en=0.704), False),            # short of it
    (scores(0.70, en=0.7), scores(0.60, en=0.6), False),               # worse
    (scores(0.70, en=0.8, es=0.6), scores(0.72, en=0.8 - MAX_LANGUAGE_DROP, es=0.64), True),
    (scores(0.70, en=0.8, es=0.6), scores(0.75, en=0.78, es=0.72), False),  # en falls by 0.02
    (scores(0.70, en=0.8, es=0.6), scores(0.75, en=0.9), False),            # es not scored: 0
])
def test_decide(champion, challenger, promote) -> None:
    verdict = decide(champion, challenger)
    assert verdict.promote is promote, verdict.reason


def test_no_evaluation_groups_promotes_nothing() -> None:
    assert not decide({"MAP@5": 0.0, "groups": 0, "per_language": {}}, scores(1.0)).promote
