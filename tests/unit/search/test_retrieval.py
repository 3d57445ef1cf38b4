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


def test_record_scores_replaces_the_same_dataset_and_mode_only() -> None:
    from plugin.search.retrieval import RECORDED_METRICS, record_scores

    metrics = {m: 0.5 for m in RECORDED_METRICS}
    old_clef = {"dataset": "clef", "split": "dev+test", "mode": "mono", "date": "2026-01-01",
                "n_queries": 9, "metrics": {"S@10": 0.1}}
    other = {"dataset": "other", "split": "dev+test", "mode": "mono", "date": "2026-01-01",
             "n_queries": 3, "metrics": {"S@10": 0.2}}
    doc = {"default": "a", "configs": {
        "a": {"retrievers": [], "last_scores": [old_clef, other]},
        "b": {"retrievers": []}}}
    result = {"dataset": "/x/clef", "n_queries": 270, "excluded_training_queries": 546,
              "split": "dev+test", "modes": ["mono"],
              "configs": {"a": {"mono": {**metrics, "latency_ms": {"p50": 1}}}, "gone": {"mono": metrics}},
              "skipped": {"b": "no model"}}
    out = record_scores(doc, result, on="2026-11-23")
    assert out["configs"]["a"]["last_scores"] == [
        other,
        {"dataset": "clef", "split": "dev+test", "mode": "mono", "date": "2026-11-23", "n_queries": 270,
         "excluded_training_queries": 546, "metrics": metrics}]
    assert "last_scores" not in out["configs"]["b"] and "gone" not in out["configs"]
    assert doc["configs"]["a"]["last_scores"][0] == old_clef
    both = {"dataset": "semeval", "n_queries": 4, "split": "all", "modes": ["mono", "cross"],
            "configs": {"b": {"mono": metrics, "cross": metrics}}, "skipped": {}}
    scores = record_scores(doc, both, on="d")["configs"]["b"]["last_scores"]
    assert sorted((s["dataset"], s["split"], s["mode"], s["date"], s["n_queries"]) for s in scores) == [
        ("semeval", "all", "cross", "d", 4), ("semeval", "all", "mono", "d", 4)]


def test_another_query_set_is_a_separate_record_and_records_load(tmp_path) -> None:
    from plugin.search.retrieval import RECORDED_METRICS, record_scores, write_scores

    metrics = {m: 0.5 for m in RECORDED_METRICS}
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"default": "a", "configs": {"a": {"retrievers": [{"kind": "bm25"}]}}}))
    for split, n in (("dev+test", 270), ("dev+test+train", 816), ("dev+test", 270)):
        write_scores(path, {"dataset": "clef", "n_queries": n, "split": split, "modes": ["mono"],
                            "configs": {"a": {"mono": metrics}}, "skipped": {}}, on=f"day-{n}")
    records = load_configs(path)["a"].last_scores
    assert [(r.key, r.n_queries) for r in records] == [(("clef", "dev+test+train", "mono"), 816),
                                                        (("clef", "dev+test", "mono"), 270)]
    assert records[0].metrics == metrics
    assert record_scores(json.loads(path.read_text()), {"dataset": "clef", "n_queries": 1, "split": "x",
                                                        "modes": [], "configs": {}}, on="d") \
        == json.loads(path.read_text())


def test_packaged_last_scores_are_structured_records() -> None:
    clef = [r for r in get_config("factsieve").last_scores if r.dataset == "clef2020_task2"]
    assert [(r.split, r.mode, r.n_queries, r.excluded_training_queries) for r in clef] == [
        ("dev+test", "mono", 270, 546)]
    assert clef[0].metrics["MAP@5"] == 0.904
