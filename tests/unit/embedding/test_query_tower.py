"""Query adapters and the tuned query tower, on a tiny random BERT: the merge arithmetic, the
committed file format, the built ONNX tower against the JAX model it was trained as, and the
embedder that sends posts and passages to different towers."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from plugin.embedding.adapter import QueryAdapter, load_adapter, packaged_adapters, save_adapter
from plugin.errors import ModelUnavailable
from plugin.settings import Settings
from tests.unit.embedding.tiny_bert import TINY, random_bert, write_tiny_folder

LAYER = "encoder.layer.1.attention.self.query.weight"


def _deltas(seed: int = 1, rank: int = 2) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    h, ff = TINY.hidden, TINY.intermediate
    return {LAYER: (rng.standard_normal((rank, h)).astype(np.float32) * 0.5,
                    rng.standard_normal((h, rank)).astype(np.float32) * 0.5),
            "encoder.layer.1.intermediate.dense.weight": (
                rng.standard_normal((rank, h)).astype(np.float32) * 0.5,
                rng.standard_normal((ff, rank)).astype(np.float32) * 0.5)}


def test_merge_adds_the_scaled_low_rank_product_and_leaves_the_input_alone():
    w = random_bert(TINY)
    a = np.array([[1.0] * TINY.hidden], np.float32)            # rank 1
    b = np.zeros((TINY.hidden, 1), np.float32)
    b[3, 0] = 2.0
    merged = QueryAdapter("t", {LAYER: (a, b)}, scale=0.5).merged(w)
    # row 3 gains 0.5 * 2 * 1 on every column; every other row is unchanged
    assert np.allclose(merged[LAYER][3], w[LAYER][3] + 1.0)
    assert np.allclose(np.delete(merged[LAYER], 3, axis=0), np.delete(w[LAYER], 3, axis=0))
    assert merged[LAYER] is not w[LAYER] and not np.allclose(w[LAYER][3], merged[LAYER][3])


def test_merge_refuses_a_delta_for_another_architecture():
    w = random_bert(TINY)
    a, b = np.zeros((2, 7), np.float32), np.zeros((TINY.hidden, 2), np.float32)
    with pytest.raises(ModelUnavailable, match="rank 2"):
        QueryAdapter("t", {LAYER: (a, b)}, scale=1.0).merged(w)
    with pytest.raises(ModelUnavailable, match="does not have"):
        QueryAdapter("t", {"encoder.layer.9.output.dense.weight": (a, b)}, scale=1.0).merged(w)


def test_saved_adapter_reads_back_in_fp16_with_its_manifest(tmp_path: Path):
    deltas = _deltas()
    path = save_adapter(tmp_path, "claims", deltas, 2.0, {"base_model": "m", "dataset_name": "d"})
    assert path.name == "claims.npz"
    adapter = load_adapter("claims", tmp_path)
    assert adapter.scale == 2.0 and adapter.rank == 2 and adapter.base_model == "m"
    assert set(adapter.deltas) == set(deltas)
    for name, (a, b) in deltas.items():
        assert adapter.deltas[name][0].dtype == np.float16
        assert np.allclose(adapter.deltas[name][0], a, atol=2e-3)
        assert np.allclose(adapter.deltas[name][1], b, atol=2e-3)
    meta = json.loads((tmp_path / "claims.json").read_text())
    assert meta["rank"] == 2 and meta["weights"] == sorted(deltas)
    assert packaged_adapters(tmp_path) == ["claims"]


def test_unknown_or_broken_adapters_say_what_is_there(tmp_path: Path):
    save_adapter(tmp_path, "claims", _deltas(), 2.0, {})
    with pytest.raises(ModelUnavailable, match=r"known: claims"):
        load_adapter("nope", tmp_path)
    np.savez(tmp_path / "half.npz", **{f"{LAYER}.A": np.zeros((2, 32), np.float16)})
    (tmp_path / "half.json").write_text("{}")
    with pytest.raises(ModelUnavailable, match="has A but no B"):
        load_adapter("half", tmp_path)


def test_the_committed_adapters_load_and_fit_the_packaged_model_shape():
    names = packaged_adapters()
    assert names, "the package commits at least one query adapter"
    for name in names:
        adapter = load_adapter(name)
        assert adapter.base_model == "factsieve/multilingual-e5-small-rebuilt"
        assert adapter.manifest["training_query_ids"], "evaluate must be able to exclude them"
        for weight, (a, b) in adapter.deltas.items():
            assert weight.startswith("encoder.layer.") and a.shape[1] in (384, 1536)
            assert b.shape[0] in (384, 1536) and a.shape[0] == b.shape[1] == adapter.rank


# -- the built tower ---------------------------------------------------------------------------
def _base_folder(tmp_path: Path) -> Path:
    """The tiny BERT as a BertModel folder (config.json + model.safetensors + ONNX)."""
    from safetensors.numpy import save_file

    folder = write_tiny_folder(tmp_path / "base")
    save_file(random_bert(TINY), str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps({
        "model_type": "bert", "hidden_size": TINY.hidden, "num_hidden_layers": TINY.layers,
        "num_attention_heads": TINY.heads, "intermediate_size": TINY.intermediate,
        "vocab_size": TINY.vocab, "max_position_embeddings": TINY.max_positions,
        "type_vocab_size": TINY.type_vocab, "layer_norm_eps": TINY.eps, "pad_token_id": TINY.pad_id}))
    return folder


@pytest.fixture()
def tower_setup(tmp_path: Path):
    """The tiny base model, an adapter for it in a folder of our own (FACTSIEVE_QUERY_ADAPTER_DIR)."""
    base = _base_folder(tmp_path)
    adapters = tmp_path / "adapters"
    save_adapter(adapters, "claims", _deltas(), 2.0, {"base_model": str(base)})
    settings = Settings(embedding_model=str(base), cache_dir=tmp_path / "cache", query_prefix="query: ",
                        passage_prefix="passage: ", query_adapter_dir=adapters)
    return settings, base, adapters


def test_built_tower_embeds_queries_with_the_merged_weights_and_passages_with_the_base(tower_setup):
    import onnxruntime as ort

    from plugin.embedding import load_embedder
    from plugin.build.adapted import build_query_tower
    from plugin.embedding.query_tower import load_query_tower
    from plugin.build import bert_onnx_model

    settings, base_dir, _ = tower_setup
    folder = build_query_tower(settings, "claims")
    assert (folder / "onnx" / "model.onnx").is_file() and (folder / "onnx" / "model_int8.onnx").is_file()
    assert build_query_tower(settings, "claims") == folder   # reused, not rebuilt
    base = load_embedder(settings.model_copy(update={"embedding_onnx_file": "onnx/model.onnx"}))
    emb = load_query_tower(settings, "claims", base)
    assert emb.name == base.name and emb.dim == base.dim  # the index's model check still holds

    texts = ["w1 w2 w3", "w4 w5"]
    merged = load_adapter("claims", settings.query_adapter_dir).merged(random_bert(TINY))
    sess = ort.InferenceSession(bert_onnx_model(merged, TINY).SerializeToString(),
                                providers=["CPUExecutionProvider"])
    tok = emb.tower._tok
    for text, got in zip(texts, emb.encode_queries(texts)):
        ids = np.array([tok.encode("query: " + text).ids], np.int64)
        want = sess.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0][0]
        assert np.allclose(got, want, atol=1e-5)
    assert np.allclose(emb.encode_passages(texts), base.encode_passages(texts))
    assert not np.allclose(emb.encode_queries(texts), base.encode_queries(texts), atol=1e-3)


def test_model_build_lists_our_own_adapters_beside_the_committed_ones(tower_setup):
    from plugin.embedding.adapter import adapter_folder_for, known_adapters

    settings, _, adapters = tower_setup
    assert "claims" in known_adapters(adapters)
    assert set(known_adapters(None)) == set(packaged_adapters())
    assert adapter_folder_for("claims", adapters) == adapters
    assert adapter_folder_for("claims", None) is None


def test_a_tower_that_is_not_built_or_was_trained_on_other_weights_is_refused(tower_setup):
    from plugin.embedding import load_embedder
    from plugin.build.adapted import build_query_tower
    from plugin.embedding.query_tower import load_query_tower

    settings, _, _ = tower_setup
    base = load_embedder(settings)
    with pytest.raises(ModelUnavailable, match="factsieve model build"):
        load_query_tower(settings, "claims", base)
    other = settings.model_copy(update={"embedding_model": "intfloat/multilingual-e5-small"})
    with pytest.raises(ModelUnavailable, match="train-query-encoder"):
        build_query_tower(other, "claims")
    build_query_tower(settings, "claims")
    base.name = "some-other-encoder"  # the index was embedded by another model than the adapter's base
    with pytest.raises(ModelUnavailable, match="index's encoder here is some-other-encoder"):
        load_query_tower(settings, "claims", base)


def test_the_jax_model_trained_is_the_graph_served(tower_setup):
    """``Tower`` (JAX, what training differentiates) and ``bert_onnx_model`` of the merged weights
    (what serving runs) compute the same embedding, with non-zero adapters in place."""
    import jax
    import onnxruntime as ort

    from plugin.build import bert_onnx_model
    from plugin.learn.train.tower import Tower, TowerOptions

    w = random_bert(TINY)
    tower = Tower(jax, TINY, w, TowerOptions(rank=2, layers=1, scale=2.0))
    rng = np.random.default_rng(3)
    params = {k: (rng.standard_normal(a.shape).astype(np.float32) * 0.3,
                  rng.standard_normal(b.shape).astype(np.float32) * 0.3)
              for k, (a, b) in tower.params.items()}
    seqs = [[0, 5, 6, 7, 2], [0, 9, 2]]
    got = tower.encode(params, tower.cache(seqs))
    merged = QueryAdapter("t", params, scale=2.0).merged(w)
    sess = ort.InferenceSession(bert_onnx_model(merged, TINY).SerializeToString(),
                                providers=["CPUExecutionProvider"])
    for seq, vec in zip(seqs, got):
        ids = np.array([seq], np.int64)
        want = sess.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0][0]
        assert np.allclose(vec, want, atol=1e-4)
    assert tower.first == TINY.layers - 1 and all(".layer.1." in k for k in tower.params)


def test_training_pulls_the_query_towards_its_fact_check():
    """A few steps of the full-corpus softmax move a query's nearest fact-check to its positive."""
    import jax
    from plugin.lab.query_tower import dense_map5, train
    from plugin.learn.train.tower import Tower, TowerOptions

    w = random_bert(TINY)
    options = TowerOptions(rank=4, layers=2, lr=5e-3, epochs=30, tau=0.05, batch_size=2)
    tower = Tower(jax, TINY, w, options)
    cached = tower.cache([[0, 5, 6, 2], [0, 7, 8, 9, 2], [0, 10, 2]])
    rng = np.random.default_rng(0)
    docs = rng.standard_normal((12, TINY.hidden)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    relevant = [{3}, {7}, {11}]
    before = dense_map5(tower.encode(tower.params, cached), docs, relevant)
    params = train(jax, tower, cached, relevant, docs, options)
    after = dense_map5(tower.encode(params, cached), docs, relevant)
    assert after["S@1"] == 1.0 and after["MAP@5"] > before["MAP@5"]


def test_a_new_served_scale_rebuilds_the_tower(tower_setup):
    """The scale is in the manifest, not the deltas: changing it must make the built tower stale."""
    from plugin.build.adapted import build_query_tower
    from plugin.embedding.query_tower import adapter_digest

    settings, _, adapters = tower_setup
    build_query_tower(settings, "claims")
    before = adapter_digest("claims", adapters)
    meta = json.loads((adapters / "claims.json").read_text())
    (adapters / "claims.json").write_text(json.dumps({**meta, "scale": 1.0}))
    assert adapter_digest("claims", adapters) != before
    folder = build_query_tower(settings, "claims")
    assert json.loads((folder / "factsieve_query_tower.json").read_text())["adapter_sha256"] == \
        adapter_digest("claims", adapters)
