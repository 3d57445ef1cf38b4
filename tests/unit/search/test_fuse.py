"""Fusion, checked against hand-computed values."""
import pytest

from plugin.search.fuse import minmax_fuse, rrf_fuse, tie_key
from plugin.models import Hit


def run(name, ids, scores=None):
    scores = scores or [1.0 / (i + 1) for i in range(len(ids))]
    return [Hit(id=d, score=s, rank=i, query=name) for i, (d, s) in enumerate(zip(ids, scores), 1)]


def test_rrf_matches_formula():
    rankings = {"bm25": run("bm25", ["a", "b", "c"]), "dense": run("dense", ["b", "d"])}
    fused = rrf_fuse(rankings, k=60)
    got = {f.id: f.score for f in fused}
    assert got["a"] == pytest.approx(1 / 61)
    assert got["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert got["c"] == pytest.approx(1 / 63)
    assert got["d"] == pytest.approx(1 / 62)
    assert [f.id for f in fused] == ["b", "a", "d", "c"]
    assert [f.rank for f in fused] == [1, 2, 3, 4]


def test_rrf_weights():
    rankings = {"bm25": run("bm25", ["a", "b"]), "dense": run("dense", ["b", "a"])}
    fused = rrf_fuse(rankings, {"bm25": 0.2, "dense": 0.8}, k=60)
    assert fused[0].id == "b"
    assert fused[0].score == pytest.approx(0.2 / 62 + 0.8 / 61)


def test_rrf_ties_are_deterministic_and_owe_nothing_to_the_id_order():
    # a and b tie on score and best rank: a hash of the id decides, the same way every time
    rankings = {"x": run("x", ["b"]), "y": run("y", ["a"])}
    assert [f.id for f in rrf_fuse(rankings)] == sorted("ab", key=tie_key)
    assert [f.id for f in rrf_fuse({"x": run("x", ["a"]), "y": run("y", ["b"])})] == sorted("ab", key=tie_key)
    # a corpus whose answers have the smaller ids (CLEF-2020's) gets no help from a tie
    ids = [str(i) for i in range(1000)]
    tied = {"x": run("x", ids[::2]), "y": run("y", ids[1::2])}
    order = [f.id for f in rrf_fuse(tied)]
    pairs = [order[i:i + 2] for i in range(0, len(order), 2)]
    smaller_first = sum(int(a) < int(b) for a, b in pairs)
    assert len(pairs) == 500 and 200 < smaller_first < 300


def test_rrf_does_not_mutate_inputs_and_explains():
    bm = run("bm25", ["a", "b"])
    rankings = {"bm25": bm, "dense": run("dense", ["a"])}
    before = list(bm)
    fused = rrf_fuse(rankings)
    assert bm == before
    assert set(fused[0].contributions) == {"bm25", "dense"}
    assert fused[0].contributions["bm25"].rank == 1


def test_rrf_zero_weight_adds_nothing():
    fused = rrf_fuse({"a": run("a", ["x"]), "b": run("b", ["y"])}, {"a": 1.0, "b": 0.0})
    assert [f.id for f in fused] == ["x", "y"]
    assert fused[1].score == 0.0


def test_rrf_empty():
    assert rrf_fuse({}) == []
    assert rrf_fuse({"a": []}) == []


def test_minmax_formula():
    rankings = {"bm25": run("bm25", ["a", "b", "c"], [10.0, 5.0, 0.0]),
                "dense": run("dense", ["c", "a"], [0.9, 0.7])}
    fused = {f.id: f.score for f in minmax_fuse(rankings, {"bm25": 0.5, "dense": 0.5})}
    # a query's lowest hit scores 0.001, not 0 (neural-search's floor): found beats not found
    assert fused["a"] == pytest.approx(0.5 * 1.0 + 0.5 * 0.001)
    assert fused["b"] == pytest.approx(0.5 * 0.5)
    assert fused["c"] == pytest.approx(0.5 * 0.001 + 0.5 * 1.0)


def test_minmax_constant_scores_normalise_to_one():
    fused = minmax_fuse({"q": run("q", ["a", "b"], [3.0, 3.0])})
    assert [f.score for f in fused] == [1.0, 1.0]


# -- stand-ins: BM25 across languages -----------------------------------------------------------
LANGS = {"k1": "ko", "k2": "ko", "e1": "en", "e2": "en"}


def lang_run(name, ids):
    return [Hit(id=d, score=1.0 / i, rank=i, query=name, source={"lang": LANGS[d]})
            for i, d in enumerate(ids, 1)]


def korean_post():
    """A Korean post: BM25 finds the two Korean near-misses, kNN ranks the English match first."""
    return {"bm25": lang_run("bm25", ["k1", "k2"]), "dense": lang_run("dense", ["e1", "k1", "k2"])}


def not_korean(hit):
    return hit.source["lang"] != "ko"


def test_without_a_stand_in_bm25_s_silence_buries_the_crosslingual_match():
    fused = rrf_fuse(korean_post(), {"bm25": 0.3, "dense": 0.7}, k=20)
    got = {f.id: f.score for f in fused}
    assert got["k1"] == pytest.approx(0.3 / 21 + 0.7 / 22)  # 0.04610
    assert got["k2"] == pytest.approx(0.3 / 22 + 0.7 / 23)  # 0.04407
    assert got["e1"] == pytest.approx(0.7 / 21)             # 0.03333
    assert [f.id for f in fused] == ["k1", "k2", "e1"]


def test_the_stand_in_gives_blind_documents_the_proxy_s_term():
    fused = rrf_fuse(korean_post(), {"bm25": 0.3, "dense": 0.7}, k=20,
                     stand_ins={"bm25": "dense"}, blind=not_korean)
    got = {f.id: f.score for f in fused}
    assert got["e1"] == pytest.approx(0.3 / 21 + 0.7 / 21)  # BM25's term taken from kNN's rank 1
    assert got["k1"] == pytest.approx(0.3 / 21 + 0.7 / 22)  # documents BM25 can see: unchanged
    assert got["k2"] == pytest.approx(0.3 / 22 + 0.7 / 23)
    assert [f.id for f in fused] == ["e1", "k1", "k2"]
    assert set(fused[0].contributions) == {"dense"}  # the explanation shows only real hits


def test_a_blind_document_bm25_did_find_gets_the_larger_term_not_both():
    rankings = {"bm25": lang_run("bm25", ["k1", "e2"]), "dense": lang_run("dense", ["e2", "k1"])}
    fused = rrf_fuse(rankings, {"bm25": 0.3, "dense": 0.7}, k=20, stand_ins={"bm25": "dense"},
                     blind=not_korean)
    got = {f.id: f.score for f in fused}
    assert got["e2"] == pytest.approx(0.3 / 21 + 0.7 / 21)  # max(1/22, 1/21) for BM25's term
    fused = rrf_fuse({"bm25": lang_run("bm25", ["e2"]), "dense": lang_run("dense", ["k1", "e2"])},
                     {"bm25": 0.3, "dense": 0.7}, k=20, stand_ins={"bm25": "dense"}, blind=not_korean)
    assert {f.id: f.score for f in fused}["e2"] == pytest.approx(0.3 / 21 + 0.7 / 22)  # own is larger


def test_minmax_stand_in_uses_the_normalised_score():
    rankings = {"bm25": [Hit("k1", 10.0, 1, "bm25", {"lang": "ko"}), Hit("k2", 5.0, 2, "bm25", {"lang": "ko"})],
                "dense": [Hit("e1", 0.9, 1, "dense", {"lang": "en"}), Hit("k1", 0.8, 2, "dense", {"lang": "ko"}),
                          Hit("k2", 0.5, 3, "dense", {"lang": "ko"})]}
    fused = minmax_fuse(rankings, {"bm25": 0.3, "dense": 0.7}, stand_ins={"bm25": "dense"}, blind=not_korean)
    got = {f.id: f.score for f in fused}
    assert got["e1"] == pytest.approx(0.3 * 1.0 + 0.7 * 1.0)
    assert got["k1"] == pytest.approx(0.3 * 1.0 + 0.7 * 0.75)
    assert got["k2"] == pytest.approx(0.3 * 0.001 + 0.7 * 0.001)
