import pytest

from plugin.learn.memory_queries import (DECISION_FIELDS, MAX_DECISIONS, POST_FIELDS, cosine_of,
                                         decisions_body, neighbours_body)


def test_neighbours_body_filters_the_tenant_inside_the_knn():
    assert neighbours_body("t1", [0.5, 1], 3) == {
        "size": 3, "_source": list(POST_FIELDS),
        "query": {"knn": {"embedding": {"vector": [0.5, 1.0], "k": 3,
                                        "filter": {"term": {"tenant": "t1"}}}}}}


def test_decisions_body_is_the_tenants_decisions_of_those_posts_oldest_first():
    assert decisions_body("t1", ["q", "p", "q"]) == {
        "size": MAX_DECISIONS, "_source": list(DECISION_FIELDS),
        "query": {"bool": {"filter": [{"term": {"tenant": "t1"}}, {"terms": {"post_id": ["p", "q"]}}]}},
        "sort": [{"at": {"order": "asc"}}, {"id": {"order": "asc"}}]}


@pytest.mark.parametrize("score, cosine", [(1.0, 1.0), (0.5, 0.0), (0.975, 0.95), (0.0, -1.0)])
def test_cosine_of_a_lucene_cosinesimil_score(score, cosine):
    assert cosine_of(score) == pytest.approx(cosine)
