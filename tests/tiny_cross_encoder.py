"""A tiny random cross-encoder (``BertForSequenceClassification`` shape, one logit) for tests.

Its scores mean nothing: it exists to test ordering, batching, truncation and the reranking
path without torch. ``numpy_logits`` is the plain numpy forward pass the ONNX graph must match.
"""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np

from plugin.build import BertShape
from tests.unit.embedding.tiny_bert import SPECIALS, WORDS, random_bert

TINY_CE = BertShape(hidden=32, layers=2, heads=4, intermediate=64, vocab=len(SPECIALS) + len(WORDS),
                    max_positions=24, type_vocab=2, eps=1e-12, pad_id=1)


def random_cross_encoder(shape: BertShape = TINY_CE, seed: int = 0) -> dict[str, np.ndarray]:
    """Random weights under ``BertForSequenceClassification`` names (``bert.`` prefix)."""
    rng = np.random.default_rng(seed + 1000)
    w = {f"bert.{k}": v for k, v in random_bert(shape, seed).items()}
    w["bert.pooler.dense.weight"] = (rng.standard_normal((shape.hidden, shape.hidden)) * 0.3).astype(np.float32)
    w["bert.pooler.dense.bias"] = (rng.standard_normal(shape.hidden) * 0.1).astype(np.float32)
    w["classifier.weight"] = rng.standard_normal((1, shape.hidden)).astype(np.float32)
    w["classifier.bias"] = np.array([0.1], np.float32)
    return w


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf)(x)


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def numpy_logit(weights: dict[str, np.ndarray], shape: BertShape, ids: list[int]) -> float:
    """BertForSequenceClassification's logit for one unpadded sequence, in float64."""
    w = {k.removeprefix("bert."): v.astype(np.float64) for k, v in weights.items()}
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
    pooled = np.tanh(dense(x[0], "pooler.dense"))
    return float(dense(pooled, "classifier")[0])


def word_tokenizer():
    """Word-level tokenizer over ``TINY_CE``'s vocabulary with the XLM-R pair template."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {t: i for i, t in enumerate(SPECIALS + WORDS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", 0), ("</s>", 2)])
    tok.add_special_tokens(SPECIALS)
    return tok


def write_tiny_cross_encoder(folder: Path, shape: BertShape = TINY_CE, seed: int = 0, *,
                             tokenizer_json: Path | None = None) -> Path:
    """tokenizer.json (``tokenizer_json`` copied, or the word-level one), config.json and
    onnx/model.onnx: the layout ``OnnxCrossEncoder`` loads."""
    import onnx

    from plugin.build import bert_classifier_onnx_model

    folder = Path(folder)
    (folder / "onnx").mkdir(parents=True, exist_ok=True)
    if tokenizer_json is not None:
        shutil.copyfile(tokenizer_json, folder / "tokenizer.json")
    else:
        word_tokenizer().save(str(folder / "tokenizer.json"))
    (folder / "config.json").write_text(json.dumps(
        {"architectures": ["BertForSequenceClassification"], "hidden_size": shape.hidden,
         "max_position_embeddings": shape.max_positions, "pad_token_id": shape.pad_id,
         "num_labels": 1}))
    model = bert_classifier_onnx_model(random_cross_encoder(shape, seed), shape)
    onnx.save_model(model, str(folder / "onnx" / "model.onnx"))
    return folder
