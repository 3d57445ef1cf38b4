"""The records file: what ``evaluate --record`` measured, beside the runtime configurations."""
import json

from plugin.lab.evaluate.records import RECORDED_METRICS, load_records, record_scores, write_scores
from plugin.search.retrieval import load_configs

from tests.conftest import ROOT

RECORDS = ROOT / "records" / "retrieval.json"


def test_record_scores_replaces_the_same_dataset_and_mode_only() -> None:
    metrics = {m: 0.5 for m in RECORDED_METRICS}
    old_clef = {"dataset": "clef", "split": "dev+test", "mode": "mono", "date": "2026-01-01",
                "n_queries": 9, "metrics": {"S@10": 0.1}}
    other = {"dataset": "other", "split": "dev+test", "mode": "mono", "date": "2026-01-01",
             "n_queries": 3, "metrics": {"S@10": 0.2}}
    doc = {"about": "x", "configs": {"a": [old_clef, other]}}
    result = {"dataset": "/x/clef", "n_queries": 270, "excluded_training_queries": 546,
              "split": "dev+test", "modes": ["mono"],
              "configs": {"a": {"mono": {**metrics, "latency_ms": {"p50": 1}}}, "new": {"mono": metrics}},
              "skipped": {"b": "no model"}}
    out = record_scores(doc, result, on="2026-11-23")
    assert out["configs"]["a"] == [
        other,
        {"dataset": "clef", "split": "dev+test", "mode": "mono", "date": "2026-11-23", "n_queries": 270,
         "excluded_training_queries": 546, "metrics": metrics}]
    # every configuration measured gets a record (one measured for the first time too), a
    # skipped one none; the input is not changed
    assert [s["dataset"] for s in out["configs"]["new"]] == ["clef"]
    assert "b" not in out["configs"] and out["about"] == "x"
    assert doc["configs"]["a"][0] == old_clef and "new" not in doc["configs"]
    both = {"dataset": "semeval", "n_queries": 4, "split": "all", "modes": ["mono", "cross"],
            "configs": {"b": {"mono": metrics, "cross": metrics}}, "skipped": {}}
    scores = record_scores(doc, both, on="d")["configs"]["b"]
    assert sorted((s["dataset"], s["split"], s["mode"], s["date"], s["n_queries"]) for s in scores) == [
        ("semeval", "all", "cross", "d", 4), ("semeval", "all", "mono", "d", 4)]


def test_another_query_set_is_a_separate_record_and_records_load(tmp_path) -> None:
    metrics = {m: 0.5 for m in RECORDED_METRICS}
    path = tmp_path / "records" / "retrieval.json"  # made, with its folder, by the first write
    for split, n in (("dev+test", 270), ("dev+test+train", 816), ("dev+test", 270)):
        write_scores(path, {"dataset": "clef", "n_queries": n, "split": split, "modes": ["mono"],
                            "configs": {"a": {"mono": metrics}}, "skipped": {}}, on=f"day-{n}")
    records = load_records(path)["a"]
    assert [(r.key, r.n_queries) for r in records] == [(("clef", "dev+test+train", "mono"), 816),
                                                        (("clef", "dev+test", "mono"), 270)]
    assert records[0].metrics == metrics
    assert record_scores(json.loads(path.read_text()), {"dataset": "clef", "n_queries": 1, "split": "x",
                                                        "modes": [], "configs": {}}, on="d") \
        == json.loads(path.read_text())
    assert load_records(tmp_path / "none.json") == {}


def test_committed_records_are_structured_and_name_packaged_configurations() -> None:
    records = load_records(RECORDS)
    assert set(records) <= set(load_configs())
    clef = [r for r in records["factsieve"] if r.dataset == "clef2020_task2"]
    assert [(r.split, r.mode, r.n_queries, r.excluded_training_queries) for r in clef] == [
        ("dev+test", "mono", 270, 546), ("dev+test", "auto", 270, 546)]
    assert [r.metrics["MAP@5"] for r in clef] == [0.9058, 0.8959]
    # the product's default mode with fact-checks in 30 languages beside CLEF's: a record of its own
    mixed = [r for r in records["factsieve"] if r.dataset == "clef2020_task2+vclaims_multilingual"]
    assert [(r.split, r.mode, r.metrics["MAP@5"]) for r in mixed] == [("dev+test", "auto", 0.878)]
    # the reranker in every language: reranked where its measured gate allows, never below the first stage
    for dataset in ("clef2020_task2", "clef2020_task2+vclaims_multilingual", "clef2021_task2a_ar",
                    "semeval2025_task7_sample"):
        first = {r.key: r.metrics["MAP@5"] for r in records["factsieve"] if r.dataset == dataset}
        reranked = {r.key: r.metrics["MAP@5"] for r in records["hybrid-rerank"] if r.dataset == dataset}
        assert reranked and all(reranked[k] >= first[k] for k in reranked if k in first), dataset
    for scores in records.values():
        assert scores and all(set(s.metrics) == set(RECORDED_METRICS) for s in scores)
