"""A tiny random BERT (and a folder an ``OnnxEmbedder`` can load) for fast, server-free tests."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from plugin.build import BertShape

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]
WORDS = ["query:", "passage:"] + [f"w{i}" for i in range(94)]
TINY = BertShape(hidden=32, layers=2, heads=4, intermediate=64, vocab=len(SPECIALS) + len(WORDS),
                 max_positions=16, type_vocab=2, eps=1e-12, pad_id=1)


def random_bert(shape: BertShape, seed: int = 0) -> dict[str, np.ndarray]:
    """Random weights under Hugging Face BertModel names, scaled so every layer matters."""
    rng = np.random.default_rng(seed)
    h, ff = shape.hidden, shape.intermediate

    def mat(*dims: int, scale: float = 0.3) -> np.ndarray:
        return (rng.standard_normal(dims) * scale).astype(np.float32)

    def ln(prefix: str) -> dict[str, np.ndarray]:
        return {prefix + ".weight": 1 + mat(h, scale=0.1), prefix + ".bias": mat(h, scale=0.1)}

    w = {"embeddings.word_embeddings.weight": mat(shape.vocab, h, scale=1.0),
         "embeddings.position_embeddings.weight": mat(shape.max_positions, h, scale=0.5),
         "embeddings.token_type_embeddings.weight": mat(shape.type_vocab, h, scale=0.5),
         **ln("embeddings.LayerNorm")}
    for i in range(shape.layers):
        p = f"encoder.layer.{i}."
        for name, n_out, n_in in [("attention.self.query", h, h), ("attention.self.key", h, h),
                                  ("attention.self.value", h, h), ("attention.output.dense", h, h),
                                  ("intermediate.dense", ff, h), ("output.dense", h, ff)]:
            w[p + name + ".weight"] = mat(n_out, n_in)
            w[p + name + ".bias"] = mat(n_out, scale=0.1)
        w.update(ln(p + "attention.output.LayerNorm"))
        w.update(ln(p + "output.LayerNorm"))
    return w


def write_tiny_folder(folder: Path, shape: BertShape = TINY, seed: int = 0) -> Path:
    """tokenizer.json (word-level, ``<s> … </s>``), config.json and onnx/model.onnx."""
    import onnx
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    from plugin.build import bert_onnx_model

    vocab = {t: i for i, t in enumerate(SPECIALS + WORDS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    tok.add_special_tokens(SPECIALS)
    (folder / "onnx").mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    (folder / "config.json").write_text(json.dumps(
        {"hidden_size": shape.hidden, "max_position_embeddings": shape.max_positions,
         "pad_token_id": shape.pad_id}))
    onnx.save_model(bert_onnx_model(random_bert(shape, seed), shape), str(folder / "onnx" / "model.onnx"))
    return folder
