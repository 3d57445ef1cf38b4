"""The torch-free parts of reranker training: the split, negative mining, batching, paths.
(Training itself needs torch and is not run in the test suite.)"""
from __future__ import annotations

import hashlib
import random
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from plugin.errors import BadInput, ModelUnavailable
from plugin.search.rerank import passage as passage_text
from plugin.settings import Settings
from plugin.lab.reranker import (
    GroupSource,
    TrainingGroup,
    TrainOptions,
    epoch_batches,
    fit_reranker,
    load_groups,
    mine_groups,
    output_dir,
    sample_epoch,
    save_groups,
    sha1_digit,
    spearman,
    training_query_ids,
)


def test_split_field_wins() -> None:
    queries = [{"id": "1", "split": "train"}, {"id": "2", "split": "dev"}, {"id": "3", "split": "test"},
               {"id": "4", "split": "train"}]
    assert training_query_ids(queries) == (["1", "4"], "queries with split == 'train'")


def test_sha1_rule_without_split() -> None:
    queries = [{"id": str(i)} for i in range(200)]
    ids, rule = training_query_ids(queries)
    assert "sha1" in rule
    expected = [str(i) for i in range(200) if hashlib.sha1(str(i).encode()).hexdigest()[0] in "0123456789"]
    assert ids == expected and 0 < len(ids) < 200
    assert all(sha1_digit(i).isdigit() for i in ids)


def test_no_training_queries_is_bad_input() -> None:
    with pytest.raises(BadInput, match="no training queries"):
        training_query_ids([{"id": "1", "split": "test"}])


def test_passage_text_is_title_plus_claim() -> None:
    assert passage_text({"title": "T", "claim": "C"}) == "T\nC"
    assert passage_text({"title": "same", "claim": "Same"}) == "Same"
    assert passage_text({"claim": "C"}) == "C"


@dataclass
class _Result:
    matches: list


class _FakeMatcher:
    def __init__(self, ranked: dict[str, list[str]]) -> None:
        self.ranked, self.seen = ranked, []

    def match(self, req):
        self.seen.append(req.text)
        return _Result([{"id": d, "title": None, "claim": f"claim {d}"} for d in self.ranked[req.text]])


class _FakeStore:
    def find(self, alias, doc_id):
        return {"claim": f"claim {doc_id}", "title": f"title {doc_id}"} if doc_id != "gone" else None


def test_mining_reads_only_training_queries_and_drops_relevant() -> None:
    queries = [{"id": "1", "text": "post one"}, {"id": "2", "text": "post two"},
               {"id": "3", "text": "post three"}]
    qrels = {"1": {"a"}, "2": {"b"}, "3": {"c", "gone"}}
    matcher = _FakeMatcher({"post one": ["x", "a", "y"], "post two": ["b"], "post three": ["c", "z"]})
    groups = mine_groups(matcher, _FakeStore(), "alias", queries, qrels, ["1", "3"], depth=3)
    assert matcher.seen == ["post one", "post three"]  # query 2 is never matched
    assert groups == [TrainingGroup("1", "post one", "title a\nclaim a", ("claim x", "claim y")),
                      TrainingGroup("3", "post three", "title c\nclaim c", ("claim z",))]


def test_batches_are_whole_groups_with_sampled_negatives() -> None:
    groups = [TrainingGroup(str(i), f"q{i}", f"p{i}", tuple(f"n{i}-{j}" for j in range(10)))
              for i in range(5)] + [TrainingGroup("short", "qs", "ps", ("only",))]
    batches = epoch_batches(groups, per_step=2, negatives=3, pool=4, rng=random.Random(0))
    assert [len(q) for q, _ in batches] == [8, 8, 8]
    seen = set()
    for queries, passages in batches:
        for g in range(len(queries) // 4):
            qs, ps = queries[4 * g: 4 * g + 4], passages[4 * g: 4 * g + 4]
            assert len(set(qs)) == 1
            group = next(x for x in groups if x.query == qs[0])
            seen.add(group.query_id)
            assert ps[0] == group.positive
            assert set(ps[1:]) <= set(group.negatives[:4])  # sampled from the top of the pool
            if group.query_id != "short":
                assert len(set(ps[1:])) == 3
            else:
                assert ps[1:] == ["only"] * 3
    assert seen == {g.query_id for g in groups}


def test_output_dir(tmp_path: Path) -> None:
    settings = Settings(cache_dir=tmp_path)
    assert output_dir("clef2020-e5small", settings) == tmp_path / "models" / "rerankers" / "clef2020-e5small"
    assert output_dir(str(tmp_path / "x"), settings) == tmp_path / "x"
    assert output_dir("./here", settings) == Path("./here")
    with pytest.raises(BadInput):
        output_dir("", settings)


def test_spearman() -> None:
    assert spearman(np.array([1.0, 2, 3]), np.array([10.0, 20, 30])) == pytest.approx(1.0)
    assert spearman(np.array([1.0, 2, 3]), np.array([3.0, 2, 1])) == pytest.approx(-1.0)


def test_bad_arguments_fail_before_torch(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="loss"):
        fit_reranker(Settings(cache_dir=tmp_path), GroupSource(dataset=tmp_path), "x",
                     TrainOptions(loss="hinge"))
    with pytest.raises(BadInput, match="--negatives"):
        fit_reranker(Settings(cache_dir=tmp_path), GroupSource(dataset=tmp_path), "x",
                     TrainOptions(negatives=0))


def test_missing_torch_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ModelUnavailable, match=r"factsieve\[train\]"):
        fit_reranker(Settings(cache_dir=tmp_path), GroupSource(dataset=tmp_path), "x")


def test_groups_round_trip_and_refuse_foreign_queries(tmp_path: Path) -> None:
    groups = [TrainingGroup("1", "q one", "p one", ("n1", "n2")), TrainingGroup("3", "q", "p", ())]
    meta = {"split_rule": "r", "training_query_ids": ["1", "3"], "first_stage": "factsieve",
            "mining_s": 1.0}
    path = tmp_path / "g.jsonl"
    save_groups(path, groups, meta)
    assert load_groups(path) == (groups, meta)
    save_groups(path, groups, {**meta, "training_query_ids": ["1"]})
    with pytest.raises(BadInput, match="outside its training split"):
        load_groups(path)
    path.write_text('{"kind": "something else"}\n')
    with pytest.raises(BadInput, match="train-reranker mine"):
        load_groups(path)


def test_export_groups_and_out_are_checked_before_work(tmp_path: Path) -> None:
    settings = Settings(cache_dir=tmp_path)
    with pytest.raises(BadInput, match="--dataset"):
        fit_reranker(settings, GroupSource(), "x")
    with pytest.raises(BadInput, match="--out"):
        fit_reranker(settings, GroupSource(dataset=tmp_path), None)


def test_epoch_sampling_picks_positive_first_from_the_pool() -> None:
    steps = sample_epoch([10, 2, 0 + 1], per_step=2, negatives=3, pool=5, rng=random.Random(1))
    picks = [p for s in steps for p in s]
    assert len(steps) == 2 and len(picks) == 3 * 4
    for i in range(0, len(picks), 4):
        g = picks[i][0]
        assert picks[i] == (g, 0) and all(x[0] == g and 1 <= x[1] <= min(5, [10, 2, 1][g])
                                          for x in picks[i + 1:i + 4])


def test_options_round_trip_and_a_source_is_one_of_two(tmp_path: Path) -> None:
    options = TrainOptions(epochs=10, loss="bce", train_layers=None)
    assert TrainOptions(**options.hparams()) == options
    assert list(TrainOptions().hparams())[:4] == ["epochs", "negatives", "pool", "max_length"]
    with pytest.raises(BadInput, match="--max-length"):
        TrainOptions(max_length=8)
    with pytest.raises(BadInput, match="not both"):
        GroupSource(dataset=tmp_path, files=(tmp_path / "g.jsonl",)).check()


def test_validation_holds_out_whole_queries() -> None:
    from plugin.lab.reranker.groups import EncodedGroup
    from plugin.lab.reranker.pack import hold_out

    groups = [EncodedGroup(str(q), ((q, j),)) for q in range(100) for j in range(2)]
    train, held = hold_out(groups, 0.15)
    assert hold_out(groups, 0.0) == (groups, [])
    assert len(train) + len(held) == len(groups) and 0 < len(held) < len(groups) // 2
    assert not {g.query_id for g in train} & {g.query_id for g in held}
