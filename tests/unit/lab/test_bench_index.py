"""The bench's measures of an index: recall of approximate against exact kNN, and the exact
search's body."""
from __future__ import annotations

from plugin.lab.bench_index import exact_knn_body, recall_at


def test_recall_is_the_share_of_the_exact_top_k_found():
    assert recall_at(["a", "b", "c"], ["a", "b", "c"], 3) == 1.0
    assert recall_at(["a", "x", "b"], ["a", "b", "c"], 3) == 2 / 3
    assert recall_at(["x", "y"], ["a", "b", "c", "d"], 2) == 0.0
    assert recall_at([], [], 10) == 1.0


def test_exact_search_scores_every_document_by_cosine():
    body = exact_knn_body([0.5, 0.25], 10)
    assert body["size"] == 10 and body["query"]["script_score"]["query"] == {"match_all": {}}
    script = body["query"]["script_score"]["script"]
    assert script["lang"] == "knn" and script["params"]["space_type"] == "cosinesimil"
    assert script["params"]["query_value"] == [0.5, 0.25] and script["params"]["field"] == "embedding"
