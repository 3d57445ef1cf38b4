"""The BERT encoder as JAX functions over numpy weights, with LoRA adapters on its top layers
(``Tower``), and JAX itself (``load_jax``): what the query tower (``factsieve train-query-encoder``,
``plugin.lab.query_tower``) and the cross-encoder reranker (``lora.PairScorer``) train on.

The layers below the adapted ones are frozen, so their output is computed once per input (the
cache); an epoch then runs the top layers forward and backward only.

Needs JAX on CPU (``pip install 'factsieve[tune]'``), imported when a function runs; the adapter a
trainer writes is merged into an ONNX graph by ``factsieve model build`` without it.
"""
from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from plugin.errors import BadInput, ModelUnavailable

log = logging.getLogger(__name__)

TUNE_HINT = "pip install 'factsieve[tune]' (JAX on CPU, ~80 MB)"


@dataclass(frozen=True)
class TowerOptions:
    """Hyper-parameters, chosen on a held-out slice of CLEF-2020's training queries (see the
    committed manifest's ``selection``)."""

    rank: int = 8
    #: the top N encoder layers get adapters; the ones below are frozen and cached
    layers: int = 4
    lr: float = 1e-4
    epochs: int = 4
    #: softmax temperature over cosine similarities (e5 was trained at 0.01)
    tau: float = 0.02
    batch_size: int = 32
    seed: int = 0
    #: LoRA's alpha / r
    scale: float = 2.0
    #: the share of the trained delta that is served (weight-space interpolation between the
    #: base and the tuned tower, as WiSE-FT does): half keeps the tuned scores while unrelated
    #: chatter's top confidence falls (the full delta lowers every cosine, so "far from
    #: everything" stops looking far); the numbers: docs/design/measurements.md
    interpolate: float = 0.5

    def validated(self) -> TowerOptions:
        if not 1 <= self.rank <= 64:
            raise BadInput("--rank must be between 1 and 64")
        if not 1 <= self.layers <= 48:
            raise BadInput("--layers must be between 1 and the model's depth")
        if not 0 < self.lr <= 1e-2 or not 0 < self.tau <= 1 or self.epochs < 1 or self.batch_size < 1:
            raise BadInput("--lr in (0, 0.01], --tau in (0, 1], --epochs and --batch-size >= 1")
        if not 0 < self.interpolate <= 1:
            raise BadInput("--interpolate must be in (0, 1]")
        return self


def load_jax(platform: str | None = "cpu") -> Any:
    """JAX on ``platform`` (CPU here, where the project runs; ``None`` lets JAX take an
    accelerator, as ``scripts/train_lora_remote.py`` does on a GPU box)."""
    try:
        import jax
    except ImportError as exc:
        raise ModelUnavailable(f"training a query tower needs JAX ({exc}): {TUNE_HINT}") from exc
    if platform:
        jax.config.update("jax_platforms", platform)
    return jax


# -- the model ------------------------------------------------------------------------------------
class Tower:
    """The BERT encoder as JAX functions over numpy weights, with LoRA on the top ``layers``."""

    def __init__(self, jax: Any, shape: Any, weights: dict[str, np.ndarray], options: TowerOptions) -> None:
        from plugin.embedding.adapter import ADAPTABLE

        self.jax, self.jnp = jax, jax.numpy
        self.shape, self.options = shape, options
        if options.layers > shape.layers:
            raise BadInput(f"--layers {options.layers}: the model has {shape.layers}")
        self.first = shape.layers - options.layers
        self.w = weights
        jnp = self.jnp
        self.base = {k: jnp.asarray(v) for k, v in weights.items() if k.startswith("encoder.layer.")}
        key = jax.random.PRNGKey(options.seed)
        self.names = [f"encoder.layer.{i}.{m}.weight" for i in range(self.first, shape.layers)
                      for m in ADAPTABLE]
        params = {}
        for name in self.names:
            out_d, in_d = weights[name].shape
            key, sub = jax.random.split(key)
            params[name] = (jax.random.normal(sub, (options.rank, in_d)) / math.sqrt(in_d),
                            jnp.zeros((out_d, options.rank)))
        self.params = params
        self._bottom = jax.jit(lambda x, m: self.layers_between({}, x, m, 0, self.first))
        self._top = jax.jit(lambda p, x, m: self.pool(self.layers_between(p, x, m, self.first,
                                                                            shape.layers), m))

    def embed_tokens(self, ids: Sequence[int]) -> np.ndarray:
        """Word + position + type-0 embeddings, layer-normalised (frozen: numpy)."""
        w, n = self.w, len(ids)
        e = (w["embeddings.word_embeddings.weight"][list(ids)] + w["embeddings.position_embeddings.weight"][:n]
             + w["embeddings.token_type_embeddings.weight"][0])
        mu = e.mean(-1, keepdims=True)
        var = ((e - mu) ** 2).mean(-1, keepdims=True)
        return ((e - mu) / np.sqrt(var + self.shape.eps) * w["embeddings.LayerNorm.weight"]
                + w["embeddings.LayerNorm.bias"]).astype(np.float32)

    def layers_between(self, params: dict[str, Any], x: Any, m: Any, lo: int, hi: int) -> Any:
        jnp, jax, s = self.jnp, self.jax, self.shape
        nh, hd = s.heads, s.hidden // s.heads
        bias = (1.0 - m)[:, None, None, :] * -1e9
        b, length, _ = x.shape
        scale = self.options.scale

        def lin(v: Any, name: str) -> Any:
            y = v @ self.base[name + ".weight"].T + self.base[name + ".bias"]
            if name + ".weight" in params:
                a, bb = params[name + ".weight"]
                y = y + (v @ a.T) @ bb.T * scale
            return y

        def norm(v: Any, name: str) -> Any:
            mu = v.mean(-1, keepdims=True)
            var = ((v - mu) ** 2).mean(-1, keepdims=True)
            return (v - mu) / jnp.sqrt(var + s.eps) * self.base[name + ".weight"] + self.base[name + ".bias"]

        def heads(v: Any) -> Any:
            return v.reshape(b, length, nh, hd).transpose(0, 2, 1, 3)

        for i in range(lo, hi):
            p = f"encoder.layer.{i}."
            q, k, v = (heads(lin(x, p + f"attention.self.{n}")) for n in ("query", "key", "value"))
            att = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd) + bias, -1)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(b, length, s.hidden)
            x = norm(lin(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            mid = jax.nn.gelu(lin(x, p + "intermediate.dense"), approximate=False)
            x = norm(lin(mid, p + "output.dense") + x, p + "output.LayerNorm")
        return x

    def pool(self, x: Any, m: Any) -> Any:
        jnp = self.jnp
        mean = (x * m[:, :, None]).sum(1) / jnp.maximum(m.sum(1, keepdims=True), 1e-9)
        return mean / jnp.maximum(jnp.linalg.norm(mean, axis=-1, keepdims=True), 1e-12)

    # -- batching: widths padded to a multiple of 16, so a handful of shapes get compiled; with
    # ``width`` set every batch has that width (one program: on a GPU compiling costs more than
    # the padding)
    width: int | None = None

    @staticmethod
    def pad(rows: Sequence[np.ndarray], width: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        width = max(width or 0, int(math.ceil(max(len(r) for r in rows) / 16) * 16))
        x = np.zeros((len(rows), width, rows[0].shape[-1]), np.float32)
        m = np.zeros((len(rows), width), np.float32)
        for i, r in enumerate(rows):
            x[i, :len(r)], m[i, :len(r)] = r, 1.0
        return x, m

    def cache(self, token_ids: Sequence[Sequence[int]], batch: int = 32) -> list[np.ndarray]:
        """Each query's hidden states below the adapted layers (computed once)."""
        out: list[np.ndarray] = []
        for start in range(0, len(token_ids), batch):
            chunk = token_ids[start:start + batch]
            x, m = self.pad([self.embed_tokens(ids) for ids in chunk], self.width)
            y = np.asarray(self._bottom(x, m)) if self.first else x
            out += [y[j, :len(ids)] for j, ids in enumerate(chunk)]
        return out

    def encode(self, params: dict[str, Any], cached: Sequence[np.ndarray], batch: int = 64) -> np.ndarray:
        parts = []
        for start in range(0, len(cached), batch):
            x, m = self.pad(cached[start:start + batch], self.width)
            parts.append(np.asarray(self._top(params, x, m)))
        return np.concatenate(parts) if parts else np.zeros((0, self.shape.hidden), np.float32)


# -- the command ----------------------------------------------------------------------------------
