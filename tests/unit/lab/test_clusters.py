"""The cluster evaluation's pure parts: gold claims, pairwise and B-cubed scores, the stream."""
from __future__ import annotations

import numpy as np

from plugin.claims.cluster import JoinRule, PostSignals
from plugin.lab.clusters import bm25_matrix, bcubed_f1, gold_claims, pairwise, stream, threshold_table

RULE = JoinRule(min_similarity=0.9, same_claim=None, same_answer=None, same_answer_similarity=0.0,
                bm25=None, image_distance=None)


def test_gold_claims_join_queries_sharing_a_factcheck_transitively():
    gold = gold_claims(["a", "b", "c", "d"], {"a": {"f1"}, "b": {"f1", "f2"}, "c": {"f2"}})
    assert gold["a"] == gold["b"] == gold["c"] != gold["d"]


def test_pairwise_and_bcubed():
    gold = {"a": "1", "b": "1", "c": "2", "d": "3"}
    assert pairwise(gold, gold)["pairwise_precision"] == 1.0
    pred = {"a": "x", "b": "x", "c": "x", "d": "y"}
    pw = pairwise(pred, gold)
    assert (pw["predicted_pairs"], pw["right_pairs"], pw["gold_pairs"]) == (3, 1, 1)
    assert pw["pairwise_precision"] == round(1 / 3, 4) and pw["pairwise_recall"] == 1.0
    singletons = {k: k for k in gold}
    assert pairwise(singletons, gold)["pairwise_precision"] is None
    assert bcubed_f1(gold, gold) == 1.0
    assert 0.8 < bcubed_f1(singletons, gold) < 1.0  # most gold claims are single posts


def test_stream_joins_online_and_never_merges_two_claims():
    posts = [PostSignals(p) for p in "abc"]
    # a~c and b~c, but a and b far apart: c joins the closer one, a and b stay apart
    sims = np.array([[1, 0.1, 0.92], [0.1, 1, 0.95], [0.92, 0.95, 1]], dtype=np.float32)
    claims = stream(posts, sims, RULE)
    assert claims == {"a": "a", "b": "b", "c": "b"}


def test_threshold_table_chooses_the_lowest_precise_threshold():
    posts = [PostSignals(p) for p in "abc"]
    sims = np.array([[1, 0.95, 0.85], [0.95, 1, 0.85], [0.85, 0.85, 1]], dtype=np.float32)
    gold = {"a": "1", "b": "1", "c": "2"}
    table = threshold_table(posts, sims, gold, RULE, thresholds=(0.8, 0.9, 0.99))
    assert table["chosen"]["threshold"] == 0.9
    assert table["thresholds"][0]["pairwise_precision"] < 0.95


def test_bm25_matrix_is_normalised_by_the_self_score():
    m = bm25_matrix([["vaccine", "dna"], ["vaccine", "dna"], ["football"]])
    assert np.allclose(np.diag(m), 1.0)
    assert m[0, 1] == 1.0 and m[0, 2] == 0.0


def test_the_simulated_day_posts_reposts_after_their_original():
    from plugin.lab.simulate_claims import oracle_action, stream_of

    posts = stream_of([{"id": "1", "text": "the vaccine changes your DNA says a doctor"},
                       {"id": "2", "text": "5G masts spread the virus in the city"}], reposts=3, seed=1)
    assert len(posts) == 8
    for q in ("1", "2"):
        mine = [p for p in posts if p["query"] == q]
        assert mine[0]["id"] == f"{q}~0" and all(p["t"] >= mine[0]["t"] for p in mine)
    assert oracle_action([{"id": "a"}, {"id": "b"}], {"b"}) == {"action": "confirm", "factcheck_id": "b"}
    assert oracle_action([{"id": "a"}], {"z"}) == {"action": "none"}
