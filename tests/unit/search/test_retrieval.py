"""Named retrieval configurations are data: they load, validate and weigh as documented."""
import json

import pytest

from plugin.errors import BadInput
from plugin.search.retrieval import RetrievalConfig, default_config_name, load_configs, retrieval_config

REQUIRED = {"bm25", "dense", "sieve", "hybrid-rrf", "multiquery"}


def test_packaged_configs_load_and_include_the_seed_methods():
    configs = load_configs()
    assert REQUIRED <= set(configs)
    assert default_config_name() in configs
    for name, cfg in configs.items():
        assert cfg.name == name
        assert cfg.retrievers


def test_hybrid_rrf_weights_follow_factdebug():
    cfg = retrieval_config("hybrid-rrf")
    assert cfg.weights(crosslingual=False) == {"bm25:post": 0.8, "dense:post": 0.2}
    assert cfg.weights(crosslingual=True) == {"bm25:post": 0.5, "dense:post": 0.5}


def test_unknown_config_lists_known_ones():
    with pytest.raises(BadInput, match="known: .*bm25"):
        retrieval_config("nope")


@pytest.mark.parametrize("body, message", [
    ({"retrievers": []}, "at least one retriever"),
    ({"retrievers": [{"kind": "bm25"}, {"kind": "bm25"}]}, "duplicate"),
    ({"retrievers": [{"kind": "sparse"}]}, "kind"),
    ({"retrievers": [{"kind": "bm25", "weight": -1}]}, "weight"),
    ({"retrievers": [{"kind": "bm25"}], "colour": "red"}, "colour"),
    ({"retrievers": [{"kind": "bm25"}], "rerank": {"model": "m", "weight": 0.5, "rank_prior": 2}}, "not both"),
    ({"retrievers": [{"kind": "bm25"}], "rerank": {"model": "m", "rank_prior": -1}}, "rank_prior"),
])
def test_invalid_configs_are_refused(tmp_path, body, message):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"default": "x", "configs": {"x": body}}))
    with pytest.raises(BadInput, match=message):
        load_configs(path)


def test_retriever_names():
    cfg = RetrievalConfig.model_validate({"retrievers": [{"kind": "dense", "query": "debunk"}]})
    assert cfg.retrievers[0].name == "dense:debunk"


def test_packaged_configs_carry_no_scores_and_short_descriptions() -> None:
    """Measurements live in the records file, essays in docs/design/configurations.md."""
    from plugin.search.retrieval import packaged_configs_path

    raw = json.loads(packaged_configs_path().read_text())
    for name, body in raw["configs"].items():
        assert "last_scores" not in body, name
        assert 0 < len(body["description"]) <= 300, name


def test_a_file_is_parsed_once_and_its_configurations_are_shared_read_only(tmp_path) -> None:
    from pydantic import ValidationError

    path = tmp_path / "c.json"
    path.write_text(json.dumps({"default": "x", "configs": {"x": {"retrievers": [{"kind": "bm25"}]}}}))
    first = load_configs(path)
    path.write_text("not json")  # parsed once: the second load does not read the file
    assert load_configs(path)["x"] is first["x"] and retrieval_config(None, path) is first["x"]
    first.pop("x")  # each caller gets its own mapping
    assert set(load_configs(path)) == {"x"}
    with pytest.raises(ValidationError):
        load_configs(path)["x"].rrf_k = 1
