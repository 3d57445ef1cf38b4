"""OnnxEmbedder on the tiny random model: batching, ordering, prefixes, truncation."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from plugin.embedding import OnnxEmbedder
from plugin.build.graph import quantize_int8
from plugin.errors import ModelUnavailable

TEXTS = ["w1 w2 w3", "w4", "w5 w6 w7 w8 w9 w10 w11", "w12 w13", "w14 w15 w16 w17", "w18",
         "w19 w20 w21 w22 w23"]


def _embedder(folder: Path, **kw) -> OnnxEmbedder:
    kw.setdefault("query_prefix", "query: ")
    kw.setdefault("passage_prefix", "passage: ")
    return OnnxEmbedder(folder, "tiny", threads=1, **kw)


def test_shapes_norms_and_empty_input(tiny_model_dir: Path) -> None:
    emb = _embedder(tiny_model_dir)
    assert emb.name == "tiny" and emb.dim == 32
    out = emb.encode_passages(TEXTS)
    assert out.shape == (len(TEXTS), 32) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    for empty in ([], ()):
        got = emb.encode_queries(empty)
        assert got.shape == (0, 32) and got.dtype == np.float32


def test_sorted_batches_come_back_in_input_order(tiny_model_dir: Path) -> None:
    emb = _embedder(tiny_model_dir, batch_size=2)
    batched = emb.encode_passages(TEXTS)
    one_by_one = np.stack([emb.encode_passages([t])[0] for t in TEXTS])
    np.testing.assert_allclose(batched, one_by_one, atol=1e-5)
    assert not np.allclose(batched[0], batched[1])


def test_prefixes_are_applied_inside(tiny_model_dir: Path) -> None:
    emb = _embedder(tiny_model_dir)
    bare = _embedder(tiny_model_dir, query_prefix="", passage_prefix="")
    np.testing.assert_allclose(emb.encode_queries(["w1 w2"]), bare.encode_queries(["query: w1 w2"]),
                               atol=1e-6)
    np.testing.assert_allclose(emb.encode_passages(["w1 w2"]),
                               bare.encode_passages(["passage: w1 w2"]), atol=1e-6)
    assert not np.allclose(emb.encode_queries(["w1 w2"]), emb.encode_passages(["w1 w2"]))


def test_truncates_to_model_positions(tiny_model_dir: Path) -> None:
    # the tiny model has 16 positions: a longer max_seq_length is capped, long texts truncated
    emb = _embedder(tiny_model_dir, max_seq_length=512)
    assert emb.max_seq_length == 16
    long_text = " ".join(f"w{i}" for i in range(40))
    head = " ".join(f"w{i}" for i in range(13))  # "passage:" + 13 words + <s> </s> = 16
    np.testing.assert_allclose(emb.encode_passages([long_text, "w1"])[0],
                               emb.encode_passages([head])[0], atol=1e-5)


def test_rejects_a_bare_string(tiny_model_dir: Path) -> None:
    with pytest.raises(TypeError):
        _embedder(tiny_model_dir).encode_queries("w1 w2")


def test_prefers_int8_and_it_agrees(tiny_model_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "m"
    shutil.copytree(tiny_model_dir, folder)
    quantize_int8(folder / "onnx" / "model.onnx", folder / "onnx" / "model_int8.onnx")
    int8 = _embedder(folder)
    assert int8.model_path.name == "model_int8.onnx"
    fp32 = _embedder(folder, model_file=folder / "onnx" / "model.onnx")
    cos = (int8.encode_passages(TEXTS) * fp32.encode_passages(TEXTS)).sum(axis=1)
    assert cos.min() > 0.95


def test_missing_files_are_model_unavailable(tmp_path: Path, tiny_model_dir: Path) -> None:
    with pytest.raises(ModelUnavailable, match="no ONNX model"):
        OnnxEmbedder(tmp_path, "x")
    folder = tmp_path / "no-tokenizer"
    shutil.copytree(tiny_model_dir, folder)
    (folder / "tokenizer.json").unlink()
    with pytest.raises(ModelUnavailable, match="tokenizer.json"):
        OnnxEmbedder(folder, "x")


def test_token_level_graph_is_mean_pooled(tiny_model_dir: Path, tmp_path: Path) -> None:
    """Third-party exports (optimum) output ``last_hidden_state`` and may want token_type_ids."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    table = np.random.default_rng(3).standard_normal((100, 8)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["last_hidden_state"]),
         helper.make_node("Identity", ["token_type_ids"], ["unused"])],
        "token_level",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["b", "s"])
         for n in ("input_ids", "attention_mask", "token_type_ids")],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["b", "s", 8]),
         helper.make_tensor_value_info("unused", TensorProto.INT64, ["b", "s"])],
        [numpy_helper.from_array(table, "table")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    folder = tmp_path / "tok"
    (folder / "onnx").mkdir(parents=True)
    shutil.copy(tiny_model_dir / "tokenizer.json", folder / "tokenizer.json")
    onnx.save_model(model, str(folder / "onnx" / "model.onnx"))

    emb = OnnxEmbedder(folder, "tok", threads=1)
    assert emb.dim == 8
    got = emb.encode_passages(["w1 w2", "w3"])
    ids = [[0, 7, 8, 2], [0, 9, 2]]  # <s> w1 w2 </s>; w0 is id 6 (after 4 specials and 2 prefixes)
    for row, seq in zip(got, ids):
        mean = table[seq].mean(axis=0)
        np.testing.assert_allclose(row, mean / np.linalg.norm(mean), atol=1e-6)


def test_models_opened_twice_share_their_session_and_tokenizer(tiny_model_dir: Path, tmp_path: Path) -> None:
    """Each ``Services`` opens its own models: the weights and the vocabulary are loaded once per
    process while someone holds them (``open_session``, ``open_tokenizer``); a rewritten model
    file, or another truncation length, is opened anew."""
    import os

    a, b = _embedder(tiny_model_dir), _embedder(tiny_model_dir)
    assert a._session is b._session and a._tok is b._tok
    np.testing.assert_allclose(a.encode_passages(TEXTS), b.encode_passages(TEXTS))
    shorter = _embedder(tiny_model_dir, max_seq_length=8)
    assert shorter._session is a._session and shorter._tok is not a._tok
    folder = tmp_path / "copy"
    shutil.copytree(tiny_model_dir, folder)
    copy = _embedder(folder)
    assert copy._tok is a._tok  # the same vocabulary, read from another folder
    graph = folder / "onnx" / "model.onnx"
    before = _embedder(folder)._session
    os.utime(graph, ns=(graph.stat().st_atime_ns, graph.stat().st_mtime_ns + 10**9))
    assert _embedder(folder)._session is not before
