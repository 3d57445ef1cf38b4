"""The reranker trained on CPU as a small adapter (``train-reranker lora``), on a tiny random BERT:
the JAX scorer training differentiates against the ONNX graph served, the adapter's whole head
weights through the committed file format, the folder ``model build`` writes, and training that
moves positives to the top of their groups."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from plugin.embedding.adapter import QueryAdapter, load_adapter, save_adapter
from plugin.errors import ModelUnavailable
from plugin.settings import Settings
from tests.unit.embedding.test_query_tower import _base_folder, _deltas
from tests.unit.embedding.tiny_bert import TINY, random_bert


def _head(seed: int = 4) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    h = TINY.hidden
    return {"pooler.dense.weight": (rng.standard_normal((h, h)) * 0.3).astype(np.float32),
            "pooler.dense.bias": (rng.standard_normal(h) * 0.1).astype(np.float32),
            "classifier.weight": rng.standard_normal((1, h)).astype(np.float32),
            "classifier.bias": np.array([0.25], np.float32)}


def test_whole_weights_travel_with_the_deltas_and_are_added_by_the_merge(tmp_path: Path):
    head = _head()
    save_adapter(tmp_path, "rr", _deltas(), 2.0, {"kind": "cross-encoder-lora"}, whole=head)
    adapter = load_adapter("rr", tmp_path)
    assert set(adapter.arrays) == set(head) and set(adapter.deltas) == set(_deltas())
    merged = adapter.merged(random_bert(TINY))
    for name, value in head.items():
        assert merged[name].dtype == np.float32 and np.allclose(merged[name], value, atol=2e-3)
    assert json.loads((tmp_path / "rr.json").read_text())["whole"] == sorted(head)


def test_the_classifier_graph_pools_the_first_token_or_the_mean_and_nothing_else():
    import onnxruntime as ort

    from plugin.build import bert_classifier_onnx_model

    w = {**random_bert(TINY), **_head()}
    ids = np.array([[0, 5, 6, 7, 2, 1, 1]], np.int64)
    mask = np.array([[1, 1, 1, 1, 1, 0, 0]], np.int64)

    def logit(pooling: str, m: np.ndarray = mask, i: np.ndarray = ids) -> float:
        model = bert_classifier_onnx_model(w, TINY, pooling=pooling)
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        return float(sess.run(["logits"], {"input_ids": i, "attention_mask": m})[0][0, 0])

    with pytest.raises(ValueError, match="pooling"):
        bert_classifier_onnx_model(w, TINY, pooling="max")
    assert not np.isclose(logit("mean"), logit("cls"))
    # padding is outside the mean: the same pair without its padded tail scores the same
    assert np.isclose(logit("mean"), logit("mean", mask[:, :5], ids[:, :5]), atol=1e-5)


def test_the_jax_scorer_trained_is_the_graph_served():
    """``PairScorer`` (JAX, what training differentiates) and ``bert_classifier_onnx_model`` of the
    merged weights with mean pooling (what ``model build`` writes) give the same logits."""
    import jax
    import onnxruntime as ort

    from plugin.build import bert_classifier_onnx_model
    from plugin.learn.train.lora import LoraRerankerOptions, PairScorer

    w = random_bert(TINY)
    scorer = PairScorer(jax, TINY, w, LoraRerankerOptions(rank=2, layers=1, scale=2.0))
    rng = np.random.default_rng(5)
    lora = {k: (rng.standard_normal(a.shape).astype(np.float32) * 0.3,
                rng.standard_normal(b.shape).astype(np.float32) * 0.3)
            for k, (a, b) in scorer.params["lora"].items()}
    params = {"lora": lora, "head": _head()}
    pairs = [[0, 5, 6, 2, 2, 7, 8, 2], [0, 9, 2, 2, 10, 2]]
    got = scorer.score(params, scorer.cache(pairs))
    merged = QueryAdapter("t", lora, scale=2.0, arrays=_head()).merged(w)
    sess = ort.InferenceSession(bert_classifier_onnx_model(merged, TINY, pooling="mean").SerializeToString(),
                                providers=["CPUExecutionProvider"])
    for seq, logit in zip(pairs, got):
        ids = np.array([seq], np.int64)
        want = sess.run(["logits"], {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0][0, 0]
        assert np.isclose(logit, want, atol=2e-3)  # the cache is fp16


def test_training_puts_each_positive_first_in_its_group():
    import jax
    from plugin.learn.train.lora import LoraRerankerOptions, PairScorer, group_map5, train

    options = LoraRerankerOptions(rank=4, layers=2, lr=5e-3, head_lr=1e-2, epochs=25, negatives=3,
                                  groups_per_step=2)
    scorer = PairScorer(jax, TINY, random_bert(TINY), options)
    groups = [[[0, 5, 2, 2, 6 + j, 2] for j in range(4)], [[0, 7, 2, 2, 9 + j, 2] for j in range(4)],
              [[0, 8, 2, 2, 12 - j, 2] for j in range(4)]]
    cached = [scorer.cache(g) for g in groups]
    # every pair starts at the same score (a zero classifier): ties count against the positive
    assert group_map5([scorer.score(scorer.params, g) for g in cached]) == 0.25
    params = train(jax, scorer, cached, options)
    assert group_map5([scorer.score(params, g) for g in cached]) == 1.0


def test_group_map5_counts_ties_against_the_positive():
    from plugin.learn.train.lora import group_map5

    assert group_map5([np.array([2.0, 1.0, 0.0])]) == 1.0
    assert group_map5([np.array([1.0, 1.0, 0.0])]) == 0.5
    assert group_map5([np.array([0.0, *range(1, 6)])]) == 0.0


# -- the built folder ----------------------------------------------------------------------------
@pytest.fixture()
def reranker_setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The tiny base model and a reranker adapter for it in a stand-in for the committed folder."""
    import plugin.search.lora_reranker as lr

    base = _base_folder(tmp_path)
    committed = tmp_path / "rerankers"
    save_adapter(committed, "tiny-rr", _deltas(), 2.0,
                 {"base_model": str(base), "kind": "cross-encoder-lora", "pooling": "mean",
                  "max_length": 16, "dataset_name": "d", "training_query_ids": ["q1", "q2"]},
                 whole=_head())
    monkeypatch.setattr(lr, "reranker_adapter_dir", lambda: committed)
    settings = Settings(embedding_model=str(base), cache_dir=tmp_path / "cache")
    return settings, committed


def test_model_build_writes_an_onnx_reranker_that_scores_like_the_merged_graph(reranker_setup):
    import onnxruntime as ort

    from plugin.build import bert_classifier_onnx_model
    from plugin.build.adapted import build_lora_reranker
    from plugin.search.lora_reranker import packaged_rerankers
    from plugin.search.rerank import OnnxCrossEncoder, load_reranker, read_manifest

    settings, committed = reranker_setup
    assert packaged_rerankers() == ["tiny-rr"]
    with pytest.raises(ModelUnavailable, match="factsieve model build"):
        load_reranker("rerankers/tiny-rr", settings)   # never a hub download by that name
    folder = build_lora_reranker(settings, "tiny-rr")
    assert build_lora_reranker(settings, "tiny-rr") == folder  # reused, not rebuilt
    manifest = read_manifest(folder)
    assert manifest["training_query_ids"] == ["q1", "q2"] and manifest["max_length"] == 16
    model = load_reranker("rerankers/tiny-rr", settings)
    assert isinstance(model, OnnxCrossEncoder) and model.max_seq_length == 16

    fp32 = OnnxCrossEncoder(folder, model_file=folder / "onnx" / "model.onnx", activation="none")
    merged = load_adapter("tiny-rr", committed).merged(random_bert(TINY))
    sess = ort.InferenceSession(bert_classifier_onnx_model(merged, TINY, pooling="mean").SerializeToString(),
                                providers=["CPUExecutionProvider"])
    query, passages = "w1 w2", ["w3 w4 w5", "w6"]
    got = fp32.logits(query, passages)
    for p, logit in zip(passages, got):
        ids = np.array([fp32._tok.encode(query, p).ids], np.int64)
        want = sess.run(["logits"], {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0][0, 0]
        assert np.isclose(logit, want, atol=1e-5)


def test_a_reranker_trained_on_other_weights_is_refused(reranker_setup):
    from plugin.build.adapted import build_lora_reranker

    settings, _ = reranker_setup
    other = settings.model_copy(update={"embedding_model": "intfloat/multilingual-e5-small"})
    with pytest.raises(ModelUnavailable, match="train-reranker lora"):
        build_lora_reranker(other, "tiny-rr")


def test_the_committed_rerankers_fit_the_packaged_model_and_name_their_training_queries():
    from plugin.search.lora_reranker import find_reranker_adapter, packaged_rerankers

    names = packaged_rerankers()
    assert names, "the package commits at least one reranker adapter"
    for name in names:
        adapter = find_reranker_adapter(name)
        assert adapter.base_model == "factsieve/multilingual-e5-small-rebuilt"
        assert adapter.manifest["training_query_ids"] and adapter.manifest["pooling"] == "mean"
        assert set(adapter.arrays) == {"pooler.dense.weight", "pooler.dense.bias",
                                       "classifier.weight", "classifier.bias"}


def test_training_languages_are_those_of_the_training_posts_and_their_fact_checks(tmp_path: Path):
    from plugin.lab.reranker.lora import training_languages

    def write(name: str, rows: list[dict]) -> None:
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))

    write("queries.jsonl", [{"id": "q1", "text": "a", "lang": "en"}, {"id": "q2", "text": "b", "lang": "es"},
                            {"id": "q3", "text": "c", "lang": "ko"}])
    write("qrels.jsonl", [{"query_id": "q1", "factcheck_id": "f1"}, {"query_id": "q2", "factcheck_id": "f2"},
                          {"query_id": "q3", "factcheck_id": "f3"}])
    write("factchecks.jsonl", [{"id": "f1", "claim": "x", "lang": "en"}, {"id": "f2", "claim": "y", "lang": "pt"},
                               {"id": "f3", "claim": "z", "lang": "ko"}])
    assert training_languages(tmp_path, {"q1", "q2"}) == ["en", "es", "pt"]   # q3 never trained on
    assert training_languages(tmp_path / "gone", {"q1"}) == []                 # unknown: unrestricted
    assert training_languages(None, {"q1"}) == []


def test_fold_and_holdout_split_groups_by_query_as_the_query_tower_does():
    from plugin.errors import BadInput
    from plugin.lab.query_tower import fold_of
    from plugin.lab.reranker.lora import holdout_group, split_groups
    from plugin.learn.train.groups import TrainingGroup

    groups = [TrainingGroup(str(q), "post", f"fc{j}", ("neg",)) for q in range(40) for j in range(2)]
    assert split_groups(groups) == (groups, [])
    fit, held = split_groups(groups, holdout=True)
    assert held and all(holdout_group(g.query_id) for g in held) and len(fit) + len(held) == 80
    seen = []
    for i in range(3):
        fit, held = split_groups(groups, fold=(i, 3))
        assert {fold_of(g.query_id, 3) for g in held} == {i} and i not in {fold_of(g.query_id, 3) for g in fit}
        seen += held
    assert sorted(seen, key=id) == sorted(groups, key=id)  # the folds cover every group once
    with pytest.raises(BadInput, match="give one"):
        split_groups(groups, holdout=True, fold=(0, 3))
    with pytest.raises(BadInput, match="I/K"):
        split_groups(groups, fold=(3, 3))
