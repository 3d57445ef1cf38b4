"""Reranking inside ``Matcher`` against the real OpenSearch, with a tiny random ONNX
cross-encoder that uses the real multilingual-e5 tokenizer (its scores mean nothing: the test
checks that the reranked top-k is a permutation of the fused candidates, ordered by the
reranker's scores and explained)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from plugin.embedding import rebuilt_model_dir
from plugin.build import BertShape
from plugin.search.matcher import REPROBE_AFTER, Matcher, MatchRequest
from plugin.models import Mode
from plugin.search.normalize import normalize_post
from plugin.search.rerank import OnnxCrossEncoder, load_rerankers
from plugin.search.retrieval import Rerank, retrieval_config
from tests.conftest import SAMPLES
from tests.tiny_cross_encoder import write_tiny_cross_encoder

pytestmark = pytest.mark.integration

#: vocabulary of the real tokenizer, everything else tiny
SHAPE = BertShape(hidden=16, layers=1, heads=2, intermediate=32, vocab=250037, max_positions=128)
TOP = 20


@pytest.fixture(scope="module")
def ce_folder(tmp_path_factory, embedder, settings) -> Path:
    tokenizer = rebuilt_model_dir(settings) / "tokenizer.json"
    assert tokenizer.is_file(), "the embedder fixture builds the test model"
    root = tmp_path_factory.mktemp("cache")
    return write_tiny_cross_encoder(root / "models" / "rerankers" / "tiny", SHAPE, seed=7,
                                    tokenizer_json=tokenizer)


def _queries() -> list[dict]:
    path = SAMPLES / "clef2020" / "queries.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()][:3]


def _passage(m: dict) -> str:
    title, claim = m.get("title") or "", m.get("claim") or ""
    return f"{title}\n{claim}" if title and title.strip().lower() != claim.strip().lower() else claim


def test_reranked_top_k_is_an_explained_permutation_of_the_fused_candidates(
        store, embedder, settings, sample_alias, ce_folder) -> None:
    base = retrieval_config("hybrid-rrf")
    reranked_cfg = base.model_copy(update={"name": "hybrid-rrf-tiny",
                                           "rerank": Rerank(model=str(ce_folder), top=TOP)})
    ce = OnnxCrossEncoder(ce_folder, threads=1)
    plain = Matcher(store, embedder, settings, alias=sample_alias, config=base)
    matcher = Matcher(store, embedder, settings, alias=sample_alias, config=reranked_cfg, reranker=ce)
    for q in _queries():
        req = MatchRequest(text=q["text"], lang="en", mode=Mode.CROSS, k=TOP)
        fused = plain.match(req).matches
        result = matcher.match(req)
        got = result.matches
        assert len(fused) == TOP
        assert sorted(m["id"] for m in got) == sorted(m["id"] for m in fused)  # a permutation
        assert [m["rank"] for m in got] == list(range(1, TOP + 1))
        by_id = {m["id"]: m for m in fused}
        expected = ce.score(normalize_post(q["text"]), [_passage(m) for m in fused])
        expected_by_id = {m["id"]: s for m, s in zip(fused, expected)}
        for m in got:
            explain = m["explain"]
            assert explain["rerank"]["score"] == pytest.approx(expected_by_id[m["id"]], abs=1e-5)
            # the first-stage explanation survives reranking
            assert {k: v for k, v in explain.items() if k != "rerank"} == by_id[m["id"]]["explain"]
        scores = [m["explain"]["rerank"]["score"] for m in got]
        assert scores == sorted(scores, reverse=True)
        assert [m["id"] for m in got] != [m["id"] for m in fused]  # it did reorder something
        assert result.timings_ms["rerank_ms"] > 0

        # k below top: the best-scored k of the same fused candidates
        top5 = matcher.match(MatchRequest(text=q["text"], lang="en", mode=Mode.CROSS, k=5)).matches
        assert [m["id"] for m in top5] == [m["id"] for m in got[:5]]


def test_configs_name_rerankers_relative_to_the_model_cache(
        store, embedder, settings, sample_alias, ce_folder) -> None:
    local = settings.model_copy(update={"cache_dir": ce_folder.parent.parent.parent})
    base = retrieval_config("hybrid-rrf")
    configs = {"hybrid-rrf": base,
               "hybrid-tiny": base.model_copy(update={"name": "hybrid-tiny",
                                                      "rerank": Rerank(model="rerankers/tiny", top=10)}),
               "hybrid-missing": base.model_copy(update={"name": "hybrid-missing",
                                                         "rerank": Rerank(model="rerankers/nope")})}
    rerankers = load_rerankers(configs, local)
    assert set(rerankers) <= {"hybrid-tiny", "hybrid-missing"} and "hybrid-tiny" in rerankers
    matcher = Matcher(store, embedder, local, alias=sample_alias, config=configs["hybrid-tiny"],
                      reranker=rerankers["hybrid-tiny"])
    result = matcher.match(MatchRequest(text=_queries()[0]["text"], lang="en", k=10))
    assert len(result.matches) == 10 and all("rerank" in m["explain"] for m in result.matches)


class MeteredReranker:
    """Scores by passage length and advances a fake clock by ``ms`` per pair: the budget logic
    is tested without timing anything."""

    name = "metered"

    def __init__(self, ms: float) -> None:
        self.ms, self.now, self.calls = ms, 0.0, []

    def clock(self) -> float:
        return self.now

    def score(self, query: str, passages: list[str]) -> list[float]:
        self.calls.append(len(passages))
        self.now += self.ms * len(passages) / 1e3
        return [len(p) / 1000 for p in passages]


def test_a_live_budget_reranks_what_fits_and_says_so(store, embedder, settings, sample_alias):
    cfg = retrieval_config("hybrid-rrf").model_copy(update={"name": "metered", "rerank": Rerank(model="m", top=TOP)})
    ce = MeteredReranker(ms=40.0)
    matcher = Matcher(store, embedder, settings, alias=sample_alias, config=cfg, reranker=ce)
    matcher.clock = ce.clock
    text = _queries()[0]["text"]
    first = matcher.match(MatchRequest(text=text, k=10, rerank_budget_ms=150))
    # the cost is measured first (two batches of the head: the second counts), then 150 // 40
    assert ce.calls == [TOP, TOP, 3] and first.reranked
    assert first.notes == ("reranked the top 3 of 20 within the 150 ms budget",)
    second = matcher.match(MatchRequest(text=text, k=10, rerank_budget_ms=150))
    assert ce.calls[-1] == 3 and second.reranked  # 150 // 40 ms a pair
    unbounded = matcher.match(MatchRequest(text=text, k=10))
    assert ce.calls[-1] == TOP and unbounded.reranked and unbounded.notes == ()
    tight = matcher.match(MatchRequest(text=text, k=10, rerank_budget_ms=50))
    assert ce.calls[-1] == TOP and not tight.reranked  # 50 // 40 = 1 pair: not worth it
    assert "fits fewer than 2 pairs (~40 ms a pair measured)" in tight.notes[0]
    # the cost is re-measured after REPROBE_AFTER such matches (a stall must not turn it off for good)
    for _ in range(REPROBE_AFTER - 1):
        assert not matcher.match(MatchRequest(text=text, k=10, rerank_budget_ms=50)).reranked
    probe = matcher.match(MatchRequest(text=text, k=10, rerank_budget_ms=50))
    assert ce.calls[-1] == 2 and probe.reranked
    fused = Matcher(store, embedder, settings, alias=sample_alias, config=retrieval_config("hybrid-rrf"))
    assert [m["id"] for m in tight.matches] == [m["id"] for m in fused.match(MatchRequest(text=text, k=10)).matches]
