"""The fine-tuned verdict model (``train-verdict --kind cross-encoder``) on a tiny random BERT: its
input written in one place, the training data's weights and batches, training that learns the
labels, and the ONNX folder ``model build`` writes scoring as the JAX model trained."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from plugin.embedding.adapter import save_adapter
from plugin.errors import ModelMismatch, ModelUnavailable
from plugin.lab.verdict import Example
from plugin.settings import Settings
from plugin.verify import verdict_model as vm
from plugin.verify.scoring import LABELS
from tests.unit.embedding.test_query_tower import _base_folder, _deltas
from tests.unit.embedding.tiny_bert import TINY, random_bert

SUPPORTED, REFUTED, NEE, CONFLICTING = LABELS


def test_the_claim_comes_after_its_date_and_the_evidence_items_are_joined():
    assert vm.claim_segment("  5G causes\nCOVID-19. ", "2020-10-25") == "2020-10-25: 5G causes COVID-19."
    assert vm.claim_segment("5G causes COVID-19.", None) == "5G causes COVID-19."
    pairs = [{"question": "Is it?", "answer": "No."}, {"question": "Who said", "answer": "a blog"}]
    assert vm.evidence_segment(pairs) == "Is it? No. | Who said a blog"
    assert vm.evidence_segment([]) == "no evidence"
    many = [{"question": f"q{i}", "answer": "a"} for i in range(20)]
    assert vm.evidence_segment(many).count(vm.SEPARATOR) == 9  # MAX_PAIRS items, as the head reads


def _ex(i: int, label: str, source: str = "averitec") -> Example:
    return Example(str(i), f"claim {i}", ({"question": "q", "answer": "a"},), label, source)


def test_a_capped_dataset_keeps_each_labels_share_in_order():
    from plugin.lab.verdict_xenc import capped

    data = [_ex(i, SUPPORTED if i % 4 else REFUTED, "liar_plus") for i in range(100)]
    got = capped(data, 20, seed=0)
    assert len(got) == 20 and [e.id for e in got] == sorted((e.id for e in got), key=int)
    assert sum(e.label == REFUTED for e in got) == 5
    assert capped(data, 0, seed=0) == data and capped(data, 500, seed=0) == data


def test_loss_weights_balance_labels_within_a_dataset_and_datasets_against_averitec():
    from plugin.lab.verdict_xenc import loss_weights

    y = np.array([0, 0, 0, 1, 0, 1])
    source = np.array(["averitec"] * 4 + ["liar_plus"] * 2)
    w = loss_weights(y, source, 0.5)
    assert np.isclose(w.mean(), 1.0)
    av = w[:4]
    assert np.isclose(av[:3].sum(), av[3])                    # each label the same total weight
    assert np.isclose(w[4:].sum(), 0.5 * av.sum())             # the other dataset at extra_weight


def test_length_batches_cover_every_example_once_in_batches_of_similar_length():
    from plugin.lab.verdict_xenc import bucket, length_batches

    lengths = list(np.random.default_rng(1).integers(5, 200, 103))
    batches = length_batches(lengths, 8, np.random.default_rng(0))
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(103)) and max(len(b) for b in batches) == 8
    assert all(np.all(np.diff([lengths[i] for i in b]) >= 0) for b in batches)
    assert [bucket(n) for n in (1, 64, 65, 192)] == [64, 64, 128, 192]


# -- training and serving on the tiny model -------------------------------------------------------
def _head4(seed: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    h = TINY.hidden
    return {"pooler.dense.weight": (rng.standard_normal((h, h)) * 0.3).astype(np.float32),
            "pooler.dense.bias": (rng.standard_normal(h) * 0.1).astype(np.float32),
            "classifier.weight": rng.standard_normal((len(LABELS), h)).astype(np.float32),
            "classifier.bias": (rng.standard_normal(len(LABELS)) * 0.1).astype(np.float32)}


@pytest.fixture()
def verdict_setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The tiny base model and a verdict adapter for it in a stand-in for the committed folder."""
    base = _base_folder(tmp_path)
    committed = tmp_path / "verdict"
    save_adapter(committed, "tiny-verdict", _deltas(), 2.0,
                 {"base_model": str(base), "kind": vm.KIND, "input_version": vm.INPUT_VERSION,
                  "labels": list(LABELS), "pooling": "mean", "max_length": 24}, whole=_head4())
    monkeypatch.setattr(vm, "adapter_dir", lambda: committed)
    return Settings(embedding_model=str(base), cache_dir=tmp_path / "cache"), base, committed


def test_the_built_verdict_model_scores_as_the_jax_model_it_was_trained_as(verdict_setup):
    import jax

    from plugin.build.adapted import build_verdict_model
    from plugin.embedding.adapter import load_adapter
    from plugin.learn.train.lora import LoraRerankerOptions, PairScorer
    from plugin.verify.head import softmax

    settings, base, committed = verdict_setup
    assert vm.packaged_models() == ["tiny-verdict"]
    folder = build_verdict_model(settings, "tiny-verdict")
    assert build_verdict_model(settings, "tiny-verdict") == folder  # reused, not rebuilt
    model = vm.CrossEncoderVerdictModel(folder)
    items = [("w1 w2", [{"question": "w3", "answer": "w4 w5"}]), ("w6", [])]
    got = model.batch_scores(items, ["2020-01-01", None])
    assert [list(g) for g in got] == [list(LABELS)] * 2
    assert all(abs(sum(g.values()) - 1) < 1e-3 for g in got)
    assert model.label_scores(*items[1]) == got[1]

    adapter = load_adapter("tiny-verdict", committed)
    scorer = PairScorer(jax, TINY, random_bert(TINY), LoraRerankerOptions(rank=2, layers=1, scale=2.0),
                        num_labels=len(LABELS))
    assert set(adapter.deltas) <= set(scorer.params["lora"])  # the top layer: all it adapts
    lora = {k: adapter.deltas.get(k, (np.zeros(a.shape, np.float32), np.zeros(b.shape, np.float32)))
            for k, (a, b) in scorer.params["lora"].items()}
    params = {"lora": lora, "head": dict(adapter.arrays)}
    texts = [(vm.claim_segment("w1 w2", "2020-01-01"), vm.evidence_segment(items[0][1])),
             (vm.claim_segment("w6", None), vm.evidence_segment([]))]
    ids = [e.ids for e in model._tok.encode_batch(texts)]
    want = softmax(scorer.score(params, scorer.cache(ids)).astype(np.float64))
    for g, w in zip(got, want):
        assert np.allclose([g[k] for k in LABELS], w, atol=5e-3)   # the cache is fp16


def test_a_verdict_model_of_another_input_version_or_base_is_refused(verdict_setup, tmp_path: Path):
    from plugin.build.adapted import build_verdict_model

    settings, _, committed = verdict_setup
    folder = build_verdict_model(settings, "tiny-verdict")
    manifest = json.loads((folder / vm.MANIFEST).read_text())
    (folder / vm.MANIFEST).write_text(json.dumps({**manifest, "input_version": "other"}))
    with pytest.raises(ModelMismatch, match="train-verdict"):
        vm.CrossEncoderVerdictModel(folder)
    other = settings.model_copy(update={"embedding_model": "intfloat/multilingual-e5-small"})
    with pytest.raises(ModelUnavailable, match="train-verdict --kind cross-encoder"):
        build_verdict_model(other, "tiny-verdict", dest=tmp_path / "x")
    with pytest.raises(ModelUnavailable, match="no verdict model 'nope'.*FACTSIEVE_VERDICT_MODEL"):
        build_verdict_model(settings, "nope")


def test_training_learns_the_labels_of_its_examples(verdict_setup):
    from plugin.learn.train.tower import load_jax
    from plugin.lab.verdict_xenc import Trainer, XencOptions, loss_weights, pair_texts

    _, base, _ = verdict_setup
    words = ["w1 w2", "w3 w4", "w5 w6", "w7 w8"]
    data = [Example(str(i), words[i % 4], ({"question": "w9", "answer": words[i % 4]},), LABELS[i % 4],
                    "averitec") for i in range(16)]
    trainer = Trainer(load_jax(), base, XencOptions(rank=4, layers=1, lr=5e-3, head_lr=2e-2, epochs=40,
                                                    max_length=32, batch=8))
    cached = trainer.cache(pair_texts(data))
    y = np.array([LABELS.index(e.label) for e in data])
    params = trainer.fit(cached, y, loss_weights(y, np.array(["averitec"] * 16), 0.3))
    assert (trainer.probabilities(params, cached).argmax(axis=1) == y).all()


def test_the_int8_check_compares_fp32_and_int8_labels_on_the_claims_given(verdict_setup):
    from plugin.lab.verdict_xenc import int8_agreement

    settings, _, committed = verdict_setup
    texts = [(vm.claim_segment(f"w{i} w{i + 1}", None), vm.evidence_segment([{"question": "w9", "answer": f"w{i}"}]))
             for i in range(1, 9)]
    check = int8_agreement(settings, "tiny-verdict", committed, texts)
    assert check["claims"] == 8 and 0.0 <= check["agreement"] <= 1.0
    assert set(check["ms_per_claim"]) == {"fp32", "int8"} and check["max_probability_gap"] >= 0


def test_the_committed_verdict_models_fit_the_packaged_encoder_and_say_how_they_were_measured():
    from plugin.embedding.adapter import load_adapter
    from plugin.settings import TEST_MODEL

    for name in vm.packaged_models():
        manifest = load_adapter(name, vm.adapter_dir()).manifest
        assert manifest["base_model"] == TEST_MODEL and manifest["kind"] == vm.KIND
        assert manifest["input_version"] == vm.INPUT_VERSION and manifest["labels"] == list(LABELS)
        assert {"gold", "head_same_folds"} <= set(manifest["cv"]) and manifest["trained_on"]
        assert set(manifest["data"]) >= {"averitec"} and "int8_check" in manifest


def test_serving_loads_a_built_verdict_model_and_says_when_it_is_not_built(verdict_setup):
    from plugin.build.adapted import build_verdict_model

    settings, _, committed = verdict_setup
    with pytest.raises(ModelUnavailable, match="not built.*factsieve model build"):
        vm.load_verdict_model(settings, "tiny-verdict")
    build_verdict_model(settings, "tiny-verdict")
    assert vm.load_verdict_model(settings, "tiny-verdict").name == "tiny-verdict"
    manifest = json.loads((committed / "tiny-verdict.json").read_text())
    (committed / "tiny-verdict.json").write_text(json.dumps({**manifest, "note": "retrained"}))
    with pytest.raises(ModelUnavailable, match="not built for this adapter"):   # older than it
        vm.load_verdict_model(settings, "tiny-verdict")
    with pytest.raises(ModelUnavailable, match="no verdict model 'nope'"):
        vm.load_verdict_model(settings, "nope")
