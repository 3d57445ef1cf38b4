"""The hand-written BERT ONNX graph against a plain numpy forward pass (tiny random model)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from plugin.build import BertShape, bert_onnx_model
from tests.unit.embedding.tiny_bert import TINY, random_bert

import onnx  # noqa: E402 - the dev extra: missing, the test fails rather than skips
import onnxruntime as ort  # noqa: E402

_erf = np.vectorize(math.erf)


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def reference(weights: dict[str, np.ndarray], shape: BertShape, ids: list[int]) -> np.ndarray:
    """BertModel + mean pooling + L2 normalisation for one unpadded sentence, in float64."""
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    n, h, nh = len(ids), shape.hidden, shape.heads
    hd = h // nh
    x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
         + w["embeddings.token_type_embeddings.weight"][0])
    x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], shape.eps)

    def dense(v: np.ndarray, name: str) -> np.ndarray:
        return v @ w[name + ".weight"].T + w[name + ".bias"]

    for i in range(shape.layers):
        p = f"encoder.layer.{i}."
        q, k, v = (dense(x, p + f"attention.self.{m}").reshape(n, nh, hd).transpose(1, 0, 2)
                   for m in ("query", "key", "value"))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(1, 0, 2).reshape(n, h)
        x = _layer_norm(x + dense(ctx, p + "attention.output.dense"),
                        w[p + "attention.output.LayerNorm.weight"],
                        w[p + "attention.output.LayerNorm.bias"], shape.eps)
        mid = dense(x, p + "intermediate.dense")
        mid = 0.5 * mid * (1 + _erf(mid / math.sqrt(2)))
        x = _layer_norm(x + dense(mid, p + "output.dense"), w[p + "output.LayerNorm.weight"],
                        w[p + "output.LayerNorm.bias"], shape.eps)
    mean = x.mean(0)
    return mean / np.linalg.norm(mean)


@pytest.fixture(scope="module")
def tiny() -> tuple[dict[str, np.ndarray], object]:
    weights = random_bert(TINY, seed=1)
    model = bert_onnx_model(weights, TINY)
    onnx.checker.check_model(model, full_check=True)
    return weights, model


def _session(model: object, level: object) -> object:
    opts = ort.SessionOptions()
    opts.graph_optimization_level = level
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def _run(sess: object, batch: list[list[int]], pad_id: int = TINY.pad_id) -> np.ndarray:
    width = max(map(len, batch))
    ids = np.full((len(batch), width), pad_id, np.int64)
    mask = np.zeros_like(ids)
    for r, seq in enumerate(batch):
        ids[r, :len(seq)], mask[r, :len(seq)] = seq, 1
    return sess.run(["sentence_embedding"], {"input_ids": ids, "attention_mask": mask})[0]


SENTENCES = [[0, 7, 12, 55, 2], [0, 99, 2], [0] + list(range(10, 24)) + [2], [0, 2]]
LEVELS = [ort.GraphOptimizationLevel.ORT_DISABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_ALL]


def test_graph_interface(tiny) -> None:
    _, model = tiny
    assert [i.name for i in model.graph.input] == ["input_ids", "attention_mask"]
    assert [o.name for o in model.graph.output] == ["sentence_embedding"]
    assert model.opset_import[0].version == 17
    assert {n.domain for n in model.graph.node} == {""}  # standard ops only


@pytest.mark.parametrize("level", LEVELS, ids=["no-opt", "all-opt"])
def test_matches_numpy_reference(tiny, level) -> None:
    weights, model = tiny
    sess = _session(model, level)
    for ids in SENTENCES:
        got = _run(sess, [ids])[0]
        assert got.dtype == np.float32 and got.shape == (TINY.hidden,)
        np.testing.assert_allclose(got, reference(weights, TINY, ids), atol=1e-5)


@pytest.mark.parametrize("level", LEVELS, ids=["no-opt", "all-opt"])
def test_padding_does_not_change_embeddings(tiny, level) -> None:
    weights, model = tiny
    sess = _session(model, level)
    batch = _run(sess, SENTENCES)
    for row, ids in zip(batch, SENTENCES):
        np.testing.assert_allclose(row, _run(sess, [ids])[0], atol=1e-5)
        np.testing.assert_allclose(row, reference(weights, TINY, ids), atol=1e-5)
    # whatever the pad id, padded positions are invisible
    np.testing.assert_allclose(_run(sess, SENTENCES, pad_id=50), batch, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)


def test_full_length_sequence(tiny) -> None:
    weights, model = tiny
    ids = [0] + [5] * (TINY.max_positions - 2) + [2]
    got = _run(_session(model, LEVELS[1]), [ids])[0]
    np.testing.assert_allclose(got, reference(weights, TINY, ids), atol=1e-5)
