"""Verification configurations: a configuration may inherit from a named base."""
import json

import pytest

from plugin.errors import BadInput
from plugin.verify.config import load_configs, packaged_path, resolve_bases

from tests.conftest import FIXTURES


def test_packaged_configurations_resolve_to_what_they_were_before_inheritance():
    """The snapshot was taken from the packaged file while every configuration still spelled
    out the lookup thresholds it now inherits from ``lookup``."""
    snapshot = json.loads((FIXTURES / "verification_configs_resolved.json").read_text())
    assert {n: c.model_dump(mode="json") for n, c in load_configs().items()} == snapshot
    raw = json.loads(packaged_path().read_text())
    assert "notes" not in raw  # in docs/design/verification.md
    assert {n: b.get("base") for n, b in raw["configs"].items()} == {
        "lookup": None, "qa-loop": "lookup", "single-call": "lookup", "head": None,
        "cited": "lookup", "cited-mmr": "cited"}


def test_a_configuration_takes_its_bases_fields_under_its_own():
    bodies = {"a": {"x": 1, "y": 1}, "b": {"base": "a", "y": 2}, "c": {"base": "b", "z": 3}}
    assert resolve_bases(bodies) == {"a": {"x": 1, "y": 1}, "b": {"x": 1, "y": 2},
                                     "c": {"x": 1, "y": 2, "z": 3}}
    assert bodies["b"] == {"base": "a", "y": 2}  # the input stays as it was


@pytest.mark.parametrize("bodies, message", [
    ({"a": {"base": "nope"}}, "'a' names the base 'nope', which is not one of: a"),
    ({"a": {"base": "b"}, "b": {"base": "a"}}, "cycle: a -> b -> a"),
    ({"a": {"base": "a"}}, "cycle: a -> a"),
])
def test_a_missing_base_or_a_cycle_is_refused(bodies, message):
    with pytest.raises(BadInput, match=message):
        resolve_bases(bodies)


def test_a_file_with_a_missing_base_is_refused(tmp_path):
    path = tmp_path / "v.json"
    path.write_text(json.dumps({"default": "a", "configs": {"a": {"base": "b", "strategy": "lookup"}}}))
    with pytest.raises(BadInput, match="base 'b'"):
        load_configs(path)


def test_overrides_are_validated_like_the_file():
    from plugin.verify.config import verification_config, parse_overrides, with_overrides

    assert parse_overrides(["mmr_lambda=0.5", "passages=4", "mmr_lambda=null", "retrieval=bm25"]) == {
        "mmr_lambda": None, "passages": 4, "retrieval": "bm25"}
    cited = verification_config("cited")
    assert with_overrides(cited, {"mmr_lambda": 0.5}).mmr_lambda == 0.5
    for changes, message in [({"mmr_lambda": 2}, "mmr_lambda"), ({"nope": 1}, "nope"),
                             ({"strategy": "head"}, "cannot change strategy")]:
        with pytest.raises(BadInput, match=message):
            with_overrides(cited, changes)
    with pytest.raises(BadInput, match="KEY=VALUE"):
        parse_overrides(["mmr_lambda"])
