"""Train the cross-encoder reranker on two CPU cores (``factsieve train-reranker lora``): LoRA on
the top encoder layers plus a small head, with JAX, written as a small committed artifact.

**Why.** The reranker ``train-reranker fit`` writes needs torch and, at a usable speed, a GPU; its
weights (470 MB) live in one machine's cache, so a fresh clone had no reranker and evaluation
skipped ``hybrid-rerank``. This one is trained where the project is built, and what it writes is a
few hundred KB (``plugin/artefacts/rerankers/<name>.npz`` + ``.json``): ``factsieve model build``
merges it into the packaged encoder and writes the ONNX cross-encoder folder every configuration
that names it loads (``rerank.OnnxCrossEncoder``, torch-free, as before).

**The model.** A ``BertForSequenceClassification``-shaped cross-encoder initialised from the
embedding model's encoder: the (post, fact-check) pair goes through the encoder jointly (``<s> q
</s></s> p </s>``); the top ``layers`` layers carry LoRA deltas (rank ``rank`` on their six
matrices, as the query tower's); the last hidden states are mean-pooled (what e5 was trained to
pool, so the head starts from a meaningful vector, unlike a ``<s>`` token it never trained),
then a dense + tanh ``pooler`` (initialised to the identity) and a one-logit ``classifier``
(initialised to zero: every pair starts at the same score, so the first steps cannot scramble
the first stage's order through the blend).

**Cost.** The frozen bottom layers see the same pairs every epoch, so their output is computed
once per pair (the cache, as the query tower does); an epoch runs only the top layers forward and
backward. Groups come from ``train-reranker mine`` (hard negatives from the first stage it will
sit behind), each trained listwise: softmax cross-entropy of the positive against its group's
negatives (Localized Contrastive Estimation, Gao et al. 2021).
"""
from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from plugin.errors import BadInput
from plugin.learn.train.groups import TrainingGroup

log = logging.getLogger(__name__)

#: the head's weights as ``BertForSequenceClassification`` names them
HEAD = ("pooler.dense.weight", "pooler.dense.bias", "classifier.weight", "classifier.bias")


@dataclass(frozen=True)
class LoraRerankerOptions:
    """Hyper-parameters (chosen on a held-out slice of the training queries; see the manifest)."""

    rank: int = 8
    #: the top N encoder layers get adapters (the ones below are frozen and cached); 8 ranked
    #: held-out training queries' positives clearly better than 4 (docs/design/measurements.md)
    layers: int = 8
    scale: float = 2.0
    lr: float = 3e-4
    head_lr: float = 1e-3
    epochs: int = 2
    #: negatives per group, the first stage's best-ranked non-relevant fact-checks
    negatives: int = 15
    max_length: int = 128
    groups_per_step: int = 2
    seed: int = 0

    def validated(self) -> LoraRerankerOptions:
        if not 1 <= self.rank <= 64 or not 1 <= self.layers <= 48:
            raise BadInput("--rank must be in 1..64 and --layers in 1..the model's depth")
        if self.epochs < 1 or self.negatives < 1 or self.groups_per_step < 1:
            raise BadInput("--epochs, --negatives and --groups-per-step must be >= 1")
        if not 16 <= self.max_length <= 512:
            raise BadInput("--max-length must be between 16 and 512")
        if not 0 < self.lr <= 1e-2 or not 0 < self.head_lr <= 1e-1:
            raise BadInput("--lr in (0, 0.01], --head-lr in (0, 0.1]")
        return self


class PairScorer:
    """The cross-encoder as JAX functions: the frozen bottom (cached), the adapted top, the head."""

    def __init__(self, jax: Any, shape: Any, weights: dict[str, np.ndarray],
                 options: LoraRerankerOptions, start: Any = None, num_labels: int = 1) -> None:
        from plugin.learn.train.tower import Tower, TowerOptions

        self.jax, self.jnp, self.options = jax, jax.numpy, options
        self.tower = Tower(jax, shape, weights, TowerOptions(rank=options.rank, layers=options.layers,
                                                              scale=options.scale, seed=options.seed))
        h = shape.hidden
        self.params = {"lora": self.tower.params,
                       "head": {"pooler.dense.weight": self.jnp.eye(h, dtype=self.jnp.float32),
                                "pooler.dense.bias": self.jnp.zeros(h),
                                "classifier.weight": self.jnp.zeros((num_labels, h)),
                                "classifier.bias": self.jnp.zeros(num_labels)}}
        self.num_labels = num_labels
        if start is not None:
            self.params = warm_params(self.jnp, start, self.params)
        self._logits = jax.jit(self.logits)

    def pooled(self, params: dict[str, Any], x: Any, m: Any) -> Any:
        """The masked mean of the last hidden states: what the head reads."""
        t, jnp = self.tower, self.jnp
        y = t.layers_between(params["lora"], x, m, t.first, t.shape.layers)
        return (y * m[:, :, None]).sum(1) / jnp.maximum(m.sum(1, keepdims=True), 1e-9)

    def logits(self, params: dict[str, Any], x: Any, m: Any) -> Any:
        mean, jnp = self.pooled(params, x, m), self.jnp
        head = params["head"]
        pooled = jnp.tanh(mean @ head["pooler.dense.weight"].T + head["pooler.dense.bias"])
        out = pooled @ head["classifier.weight"].T + head["classifier.bias"]
        return out[:, 0] if self.num_labels == 1 else out

    def cache(self, pairs: Sequence[Sequence[int]], batch: int = 32) -> list[np.ndarray]:
        """Hidden states below the adapted layers, one array per pair, kept in fp16."""
        return [c.astype(np.float16) for c in self.tower.cache(pairs, batch)]

    def cache_groups(self, groups: Sequence[Sequence[Sequence[int]]]) -> list[list[np.ndarray]]:
        """``cache`` over whole groups of pairs, regrouped (one batched pass over all their pairs)."""
        flat = self.cache([p for g in groups for p in g])
        out, i = [], 0
        for g in groups:
            out.append(flat[i:i + len(g)])
            i += len(g)
        return out

    def score(self, params: dict[str, Any], cached: Sequence[np.ndarray], batch: int = 64,
              widths: Callable[[int], int] | None = None) -> np.ndarray:
        """Logits per cached pair: ``(n,)`` for one label, ``(n, num_labels)`` otherwise.
        ``widths``: a batch's padded width from its longest pair (default: the tower's)."""
        order = np.argsort([-len(c) for c in cached], kind="stable")
        out = np.empty((len(cached),) if self.num_labels == 1 else (len(cached), self.num_labels), np.float32)
        for start in range(0, len(cached), batch):
            idx = order[start:start + batch]
            rows = [cached[i].astype(np.float32) for i in idx]
            x, m = self.tower.pad(rows, widths(max(len(r) for r in rows)) if widths else self.tower.width)
            out[idx] = np.asarray(self._logits(params, x, m))
        return out


def warm_params(jnp: Any, adapter: Any, fresh: dict[str, Any]) -> dict[str, Any]:
    """``fresh``'s shapes filled from a trained reranker adapter (``QueryAdapter``: its LoRA
    deltas and its head), to fine-tune it further (``factsieve learn reranker`` starts from the
    packaged one). Refuses an adapter of another rank or other layers than the options give."""
    lora = {}
    for name, (a0, b0) in fresh["lora"].items():
        if name not in adapter.deltas:
            raise BadInput(f"adapter {adapter.name!r} has no delta for {name}: train with its layers")
        a, b = adapter.deltas[name]
        if a.shape != a0.shape or b.shape != b0.shape:
            raise BadInput(f"adapter {adapter.name!r}: {name} has rank {a.shape[0]}, the options "
                           f"{a0.shape[0]}")
        lora[name] = (jnp.asarray(a, dtype=jnp.float32), jnp.asarray(b, dtype=jnp.float32))
    missing = [k for k in HEAD if k not in adapter.arrays]
    if missing:
        raise BadInput(f"adapter {adapter.name!r} has no head ({', '.join(missing)})")
    return {"lora": lora, "head": {k: jnp.asarray(adapter.arrays[k], dtype=jnp.float32) for k in HEAD}}


def encode_pairs(tok: Any, groups: Sequence[TrainingGroup], negatives: int) -> list[list[list[int]]]:
    """Each group's pairs as token ids, positive first, by the tokenizer the served model uses
    (its pair template, truncated longest-first): training and inference see the same tokens."""
    out = []
    for g in groups:
        passages = [g.positive, *g.negatives[:negatives]]
        out.append([e.ids for e in tok.encode_batch([(g.query, p) for p in passages])])
    return out


def group_map5(scores: Sequence[np.ndarray]) -> float:
    """MAP@5 of the positive (index 0) within each scored group, ties counted against it."""
    aps = []
    for s in scores:
        rank = 1 + int(np.sum(s[1:] >= s[0]))
        aps.append(1.0 / rank if rank <= 5 else 0.0)
    return round(float(np.mean(aps)), 4) if aps else 0.0


def adam_step(jax: Any, head_ratio: float) -> Callable[..., Any]:
    """One jitted Adam update ``(params, grads, m1, m2, t, lr) -> (params, m1, m2)`` over
    ``{"lora": …, "head": …}`` parameters, the head at ``head_ratio`` times the LoRA rate."""
    jnp, tree = jax.numpy, jax.tree_util

    @jax.jit
    def adam(params: Any, grads: Any, m1: Any, m2: Any, t: Any, lr: Any) -> Any:
        b1, b2 = 0.9, 0.999
        m1 = tree.tree_map(lambda a, g: b1 * a + (1 - b1) * g, m1, grads)
        m2 = tree.tree_map(lambda a, g: b2 * a + (1 - b2) * g * g, m2, grads)
        rates = {"lora": lr, "head": lr * head_ratio}

        def upd(part: str) -> Any:
            return tree.tree_map(lambda w, a, v: w - rates[part] * (a / (1 - b1 ** t))
                                 / (jnp.sqrt(v / (1 - b2 ** t)) + 1e-8), params[part], m1[part], m2[part])
        return {p: upd(p) for p in params}, m1, m2

    return adam


def train(jax: Any, scorer: PairScorer, cached: Sequence[Sequence[np.ndarray]],
          options: LoraRerankerOptions,
          on_epoch: Callable[[int, float, dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Adam (LoRA at ``lr``, the head at ``head_lr``), 10-step warm-up then linear decay; each step
    takes ``groups_per_step`` whole groups and the softmax cross-entropy of their positives."""
    size = 1 + options.negatives

    def loss_fn(params: Any, x: Any, m: Any) -> Any:
        z = scorer.logits(params, x, m).reshape(-1, size)
        return -jax.nn.log_softmax(z, axis=-1)[:, 0].mean()

    return fit_groups(jax, scorer, cached, options, loss_fn, on_epoch=on_epoch)


def fit_groups(jax: Any, scorer: Any, cached: Sequence[Sequence[np.ndarray]], options: Any,
               loss_fn: Callable[..., Any], *, targets: Sequence[np.ndarray] | None = None,
               on_epoch: Callable[[int, float, dict[str, Any]], None] | None = None,
               log_every: int | None = None) -> dict[str, Any]:
    """The training loop every group-wise trainer here shares (``train``, the distilled
    student's ``distil.train_student``): Adam over ``scorer.params`` (LoRA at ``options.lr``,
    the head at ``options.head_lr``), 10-step warm-up then linear decay, each step
    ``options.groups_per_step`` whole groups of ``1 + options.negatives`` cached pairs, scored by
    ``loss_fn(params, x, mask)`` or, with ``targets`` (one array per group),
    ``loss_fn(params, x, mask, stacked targets)``. Groups of another size are left out (said so)."""
    jnp, tree = jax.numpy, jax.tree_util
    size = 1 + options.negatives
    grad_fn = jax.jit(jax.value_and_grad(loss_fn))
    adam = adam_step(jax, options.head_lr / options.lr)

    params = scorer.params
    m1 = tree.tree_map(jnp.zeros_like, params)
    m2 = tree.tree_map(jnp.zeros_like, params)
    rng = np.random.default_rng(options.seed)
    usable = [i for i, g in enumerate(cached) if len(g) == size]
    if not usable:
        raise BadInput(f"no training group has {options.negatives} negatives: lower --negatives")
    if len(usable) < len(cached):  # a step's groups must be the same size; say what is left out
        log.warning("%d of %d training groups have fewer than %d negatives and are left out",
                    len(cached) - len(usable), len(cached), options.negatives)
    per = options.groups_per_step
    total_steps = options.epochs * math.ceil(len(usable) / per)
    step = 0
    for epoch in range(1, options.epochs + 1):
        t0, total, seen = time.perf_counter(), 0.0, 0
        order = rng.permutation(usable)
        for start in range(0, len(order), per):
            chosen = order[start:start + per]
            rows = [c for g in chosen for c in cached[g]]
            x, m = scorer.tower.pad([r.astype(np.float32) for r in rows], scorer.tower.width)
            if targets is None:
                loss, grads = grad_fn(params, x, m)
            else:
                loss, grads = grad_fn(params, x, m, np.stack([targets[g] for g in chosen]))
            step += 1
            lr = options.lr * min(1.0, step / 10) * max(0.0, 1 - step / (total_steps + 1))
            params, m1, m2 = adam(params, grads, m1, m2, step, lr)
            total += float(loss) * len(chosen)
            seen += len(chosen)
            if log_every and step % log_every == 0:
                log.info("step %d of %d: loss %.4f (%.1f s this epoch)", step, total_steps, total / seen,
                         time.perf_counter() - t0)
        if on_epoch is not None:
            on_epoch(epoch, total / max(seen, 1), {"seconds": round(time.perf_counter() - t0, 1),
                                                   "params": params})
    return params


# -- the command ----------------------------------------------------------------------------------


