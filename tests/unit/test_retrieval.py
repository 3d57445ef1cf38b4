"""Named retrieval configurations are data: they load, validate and weigh as documented."""
import json

import pytest

from plugin.errors import BadInput
from plugin.search.retrieval import RetrievalConfig, default_config_name, get_config, load_configs

REQUIRED = {"bm25", "dense", "sieve", "hybrid-rrf", "multiquery"}


def test_packaged_configs_load_and_include_the_seed_methods():
    configs = load_configs()
    assert REQUIRED <= set(configs)
    assert default_config_name() in configs
    for name, cfg in configs.items():
        assert cfg.name == name
        assert cfg.retrievers


def test_hybrid_rrf_weights_follow_factdebug():
    cfg = get_config("hybrid-rrf")
    assert cfg.weights(crosslingual=False) == {"bm25:post": 0.8, "dense:post": 0.2}
    assert cfg.weights(crosslingual=True) == {"bm25:post": 0.5, "dense:post": 0.5}


def test_unknown_config_lists_known_ones():
    with pytest.raises(BadInput, match="known: .*bm25"):
        get_config("nope")


@pytest.mark.parametrize("body, message", [
    ({"retrievers": []}, "at least one retriever"),
    ({"retrievers": [{"kind": "bm25"}, {"kind": "bm25"}]}, "duplicate"),
    ({"retrievers": [{"kind": "sparse"}]}, "kind"),
    ({"retrievers": [{"kind": "bm25", "weight": -1}]}, "weight"),
    ({"retrievers": [{"kind": "bm25"}], "colour": "red"}, "colour"),
])
def test_invalid_configs_are_refused(tmp_path, body, message):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"default": "x", "configs": {"x": body}}))
    with pytest.raises(BadInput, match=message):
        load_configs(path)


def test_retriever_names():
    cfg = RetrievalConfig.model_validate({"retrievers": [{"kind": "dense", "query": "debunk"}]})
    assert cfg.retrievers[0].name == "dense:debunk"


def test_record_scores_replaces_the_same_dataset_and_mode_only() -> None:
    from plugin.search.retrieval import RECORDED_METRICS, record_scores

    metrics = {m: 0.5 for m in RECORDED_METRICS}
    doc = {"default": "a", "configs": {
        "a": {"retrievers": [], "last_scores": {
            "clef (9 queries, mono, 2026-01-01)": {"S@10": 0.1},
            "other (3 queries, mono, 2026-01-01)": {"S@10": 0.2}}},
        "b": {"retrievers": []}}}
    result = {"dataset": "/x/clef", "n_queries": 270, "excluded_training_queries": 546,
              "modes": ["mono"],
              "configs": {"a": {**metrics, "latency_ms": {"p50": 1}}, "b": {"skipped": "no model"},
                          "gone": metrics}}
    out = record_scores(doc, result, on="2026-11-23")
    assert out["configs"]["a"]["last_scores"] == {
        "other (3 queries, mono, 2026-01-01)": {"S@10": 0.2},
        "clef (270 queries not used to train a reranker, 546 excluded, mono, 2026-11-23)": metrics}
    assert "last_scores" not in out["configs"]["b"] and "gone" not in out["configs"]
    assert doc["configs"]["a"]["last_scores"]["clef (9 queries, mono, 2026-01-01)"] == {"S@10": 0.1}
    both = {"dataset": "semeval", "n_queries": 4, "modes": ["mono", "cross"],
            "configs": {"b": {"mono": metrics, "cross": metrics}}}
    scores = record_scores(doc, both, on="d")["configs"]["b"]["last_scores"]
    assert sorted(scores) == ["semeval (4 queries, cross, d)", "semeval (4 queries, mono, d)"]
