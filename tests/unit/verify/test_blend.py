"""The blend table: the verdict model's weight per LLM, and the default for one nobody measured."""
import json

import pytest

from plugin.errors import BadInput
from plugin.verify.blend import blend_weight, check_table, load_table, packaged_path, with_weight, write_table

TABLE = {"default": 0.6, "models": {"smollm2-135m-instruct": 1.0, "qwen2.5-7b-instruct": 0.3}}


@pytest.mark.parametrize("llm_model, weight", [
    ("smollm2-135m-instruct", 1.0),
    ("qwen2.5-7b-instruct", 0.3),
    ("some-llm-nobody-measured", 0.6),  # the documented default
    ("", 0.6),  # FACTSIEVE_LLM_MODEL unset: the server's only model, not known by name
    ("SmolLM2-135M-Instruct", 0.6),  # names are matched exactly, as the server is sent them
])
def test_the_weight_is_the_llms_own_else_the_default(llm_model, weight):
    assert blend_weight(llm_model, TABLE) == weight


def test_the_default_applies_to_a_table_without_models():
    assert blend_weight("x", {"default": 0.25}) == 0.25


def test_the_packaged_table_is_weights_only_and_valid():
    raw = json.loads(packaged_path().read_text(encoding="utf-8"))
    assert set(raw) == {"default", "models"}  # what was measured is in docs/verification.md
    assert check_table(raw) == load_table()
    assert all(0.0 <= w <= 1.0 for w in [raw["default"], *raw["models"].values()])


@pytest.mark.parametrize("table, message", [
    ({"models": {}}, "expected"),
    ({"default": 1.5}, "'default' must be a number in 0–1"),
    ({"default": 0.5, "models": {"m": "high"}}, "'m' must be a number"),
    ({"default": True}, "'default' must be a number"),
    ([0.5], "expected"),
])
def test_a_bad_table_is_refused(table, message):
    with pytest.raises(BadInput, match=message):
        check_table(table)


def test_writing_a_weight_keeps_the_rest(tmp_path):
    path = tmp_path / "blend.json"
    write_table(TABLE, path)
    write_table(with_weight(load_table(path), "a-new-llm", 0.7), path)
    assert load_table(path) == {"default": 0.6, "models": {"a-new-llm": 0.7, "qwen2.5-7b-instruct": 0.3,
                                                           "smollm2-135m-instruct": 1.0}}
    with pytest.raises(BadInput, match="name the LLM"):
        with_weight(TABLE, "", 0.5)


def test_services_weigh_the_blend_for_the_configured_llm():
    from plugin.service.services import Services
    from plugin.settings import Settings

    table = load_table()
    for name in ["", "an-llm-nobody-measured", *table["models"]]:
        services = Services(Settings(_env_file=None, llm_model=name))
        assert services.verification.blend_weight() == blend_weight(name, table)


def test_the_packaged_table_is_never_written(tmp_path):
    before = packaged_path().read_bytes()
    with pytest.raises(BadInput, match="inside the installed package"):
        write_table(TABLE, packaged_path())
    with pytest.raises(BadInput, match="--write"):
        write_table(TABLE, packaged_path().parent / "other.json", "--write")
    assert packaged_path().read_bytes() == before and not (packaged_path().parent / "other.json").exists()
