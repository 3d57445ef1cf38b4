"""The typed verification result: frozen, and its JSON leaves out the parts a path does not have
(the whole JSON of every path is in test_result_snapshot.py)."""
import dataclasses

import pytest

from plugin.verify.result import Outcome, Statement, Tokens, VerificationResult


def outcome(**changes):
    return Outcome(**{"verdict": "Refuted", "label_scores": {"Refuted": 1.0}, "qa_pairs": (),
                      "statements": (Statement("No.", (1, 2)), Statement("Never.", (3,))), "citations": (),
                      "stage": "head", "stopped_because": "passages", "verdict_source": "head", **changes})


def test_the_justification_is_the_statements_with_their_sources():
    assert outcome().justification == "No. [1, 2] Never. [3]"
    assert outcome(statements=()).justification == ""


@pytest.mark.parametrize("changes, keys", [
    ({}, set()),
    ({"note": "why"}, {"note"}),
    ({"stage": "lookup"}, {"match"}),                    # the lookup stages show their match, null too
    ({"stage": "previously-fact-checked"}, {"match"}),
    ({"fallback_reason": "invalid", "retrieved": 0}, {"fallback_reason", "retrieved"}),
    ({"uncited_statements_dropped": 0}, {"uncited_statements_dropped"}),
])
def test_a_part_a_path_does_not_have_is_left_out(changes, keys):
    core = {"verdict", "label_scores", "justification", "statements", "qa_pairs", "citations", "stage",
            "stopped_because", "verdict_source"}
    assert set(outcome(**changes).to_dict()) == core | keys


def test_the_result_is_frozen_and_notes_show_only_when_there_are_some():
    res = VerificationResult(claim="c", date=None, config="head", strategy="head", outcome=outcome(),
                             timings_ms={"total": 0.0}, tokens=Tokens(), budget_s=1.0, prompt_versions={})
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.claim = "d"  # type: ignore[misc]
    assert "notes" not in res.to_dict()
    assert dataclasses.replace(res, notes=("lookup skipped",)).to_dict()["notes"] == ["lookup skipped"]
