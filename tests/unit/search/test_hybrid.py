"""Server-side fusion planning (pure): what fits a hybrid query, and why not."""
import pytest

from plugin.search.hybrid import NEURAL_PLUGIN, normalised_weights, server_plan
from plugin.search.retrieval import retrieval_config

B = {"_source": ["id"], "query": {"match": {"claim": "x"}}}
K = {"_source": ["id"], "query": {"knn": {"embedding": {"vector": [1.0], "k": 10}}}}


def test_no_plugin_no_plan():
    plan, why = server_plan(retrieval_config("hybrid-rrf"), {"a": B, "b": K}, {"a": 1, "b": 1}, size=10, plugins=set())
    assert plan is None and "neural-search" in why


def test_minmax_plan_has_normalised_weights_and_top_level_hybrid():
    cfg = retrieval_config("factsieve").model_copy(update={"fusion": "minmax"})
    plan, why = server_plan(cfg, {"a": B, "b": K}, {"a": 0.9, "b": 2.1}, size=10, plugins={NEURAL_PLUGIN})
    assert why == "fits"
    assert plan.body["query"] == {"hybrid": {"queries": [B["query"], K["query"]]}}
    proc = plan.pipeline_body["phase_results_processors"][0]["normalization-processor"]
    assert proc["combination"]["parameters"]["weights"] == [0.3, 0.7]
    assert plan.pipeline.startswith("factsieve-factsieve-")


def test_weighted_rrf_does_not_fit_2_19():
    plan, why = server_plan(retrieval_config("hybrid-rrf"), {"a": B, "b": K}, {"a": 0.8, "b": 0.2}, size=10,
                            plugins={NEURAL_PLUGIN})
    assert plan is None and "weights" in why


def test_equal_weight_rrf_fits():
    plan, _ = server_plan(retrieval_config("hybrid-rrf"), {"a": B, "b": K}, {"a": 0.5, "b": 0.5}, size=10,
                          plugins={NEURAL_PLUGIN})
    assert plan.pipeline_body["phase_results_processors"][0]["score-ranker-processor"]["combination"] == {
        "technique": "rrf", "rank_constant": 60}


def test_more_than_five_subqueries_do_not_fit():
    bodies = {str(i): B for i in range(6)}
    plan, why = server_plan(retrieval_config("factsieve"), bodies, {str(i): 1 for i in range(6)}, size=10,
                            plugins={NEURAL_PLUGIN})
    assert plan is None and "at most 5" in why


def test_normalised_weights():
    assert normalised_weights([1, 3]) == [0.25, 0.75]
    with pytest.raises(ValueError):
        normalised_weights([0, 0])


def test_hybrid_body_asks_for_what_the_subqueries_ask_for():
    from plugin.search.queries import bm25_query, knn_query

    bodies = {"a": bm25_query("x", lang="en", filters=None, size=10),
              "b": knn_query([1.0], filters=None, size=10)}
    plan, _ = server_plan(retrieval_config("hybrid-rrf"), bodies, {"a": 0.5, "b": 0.5}, size=10,
                          plugins={NEURAL_PLUGIN})
    assert plan.body["stored_fields"] == "_none_"
    assert plan.body["docvalue_fields"] == ["id", "lang", "domain", "publisher"]
    assert "_source" not in plan.body and plan.body["size"] == 10


def test_a_plan_whose_pipeline_is_not_installed_does_not_fit():
    cfg = retrieval_config("hybrid-rrf")
    plan, _ = server_plan(cfg, {"a": B, "b": K}, {"a": 1, "b": 1}, size=10, plugins={NEURAL_PLUGIN})
    installed = {plan.pipeline}
    assert server_plan(cfg, {"a": B, "b": K}, {"a": 1, "b": 1}, size=10, plugins={NEURAL_PLUGIN},
                       pipelines=installed)[0] == plan
    missing, why = server_plan(cfg, {"a": B, "b": K}, {"a": 1, "b": 1}, size=10,
                               plugins={NEURAL_PLUGIN}, pipelines=set())
    assert missing is None and "factsieve init" in why


def test_config_pipelines_are_what_the_plans_use():
    """What `factsieve init` installs: one pipeline per weight set that fits, named as the
    matcher names it (factsieve at k = 60: equal weights in mono fit RRF; its 0.3/0.7
    crosslingual weights do not, in 2.19)."""
    from plugin.search.hybrid import config_pipelines, fusion_pipeline
    from plugin.search.retrieval import load_configs

    configs = load_configs()
    wanted = config_pipelines(configs.values())
    k60 = configs["factsieve"].model_copy(update={"rrf_k": 60})
    mono = fusion_pipeline(k60, [0.5, 0.5])
    assert mono[0] in config_pipelines([k60]) and config_pipelines([k60])[mono[0]] == mono[1]
    assert isinstance(fusion_pipeline(k60, [0.3, 0.7]), str)
    assert not any(n.startswith(("factsieve-bm25-", "factsieve-dense-")) for n in wanted)  # one sub-query
    plan, _ = server_plan(k60, {"bm25:post": B, "dense:post": K},
                          {"bm25:post": 0.5, "dense:post": 0.5}, size=10, plugins={NEURAL_PLUGIN},
                          pipelines=set(config_pipelines([k60])))
    assert plan.pipeline == mono[0]


def test_rrf_with_another_rank_constant_does_not_fit_2_19():
    """neural-search 2.19 ignores rank_constant (measured: k = 20 scored as 60), so k = 20
    (the factsieve configuration) fuses client-side."""
    from plugin.search.hybrid import fusion_pipeline

    why = fusion_pipeline(retrieval_config("factsieve"), [0.5, 0.5])
    assert isinstance(why, str) and "rank_constant" in why
