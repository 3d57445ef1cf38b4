"""Distil the LoRA reranker into a shallower student (``factsieve train-reranker distil``): the
encoder's first ``depth`` layers with LoRA and a head, trained on CPU with JAX to score the mined
training pairs as the teacher (a committed reranker adapter, as built and served) scores them.

**Why.** The served reranker runs all of the encoder's layers for each of its pairs; a student
that runs the first ``depth`` costs about ``depth / layers`` of it a pair (attention and the
feed-forward are per layer; the embedding lookup and the head are small).

**The student.** The base encoder cut to its first ``depth`` layers (the layers a model keeps
when its top ones are dropped, as Sajjad et al. 2020, "Poor Man's BERT", do before fine-tuning),
with LoRA on the top ``layers`` of them (all by default; the ones below are frozen and cached, as
``train-reranker lora`` does). With ``warm_start`` (and a teacher of the same LoRA rank) the
student starts as the teacher's bottom: the frozen layers are the teacher's (its deltas for them
are merged in while training and written with the student), the adapted ones start from the
teacher's deltas for them;
the head (mean pooling, pooler, classifier: ``lora.PairScorer``) starts fresh, its classifier bias
at the teacher's mean logit. ``model build`` writes it like any reranker adapter, reading its
manifest's ``depth`` (``plugin.build.adapted.reranker_graph``).

**Targets.** The teacher's logits on every training group (``train-reranker mine``'s groups:
training queries only), from its built ONNX graph as served (``OnnxCrossEncoder.logits``),
computed once and kept in a file keyed by teacher and pairs (``teacher_logits``). A group is the
positive and ``negatives`` first-stage negatives: more than the 15 the teacher trained on, the
deeper ones pairs it never saw.

**Loss** (``distil_loss``): ``kl_weight * KL(softmax(t) || softmax(s))`` over each group, which
carries the order within a group (what reranking uses), plus ``mse_weight * mean((s - t)^2)``,
which keeps the logits' offset and scale (a softmax ignores the offset, and the configuration's
``rank_prior`` blends the raw logit with the first stage's rank, so the student must keep the
teacher's units for the blend chosen for the teacher to stay right).
"""
from __future__ import annotations

import dataclasses
import hashlib
import logging
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from plugin.errors import BadInput
from plugin.learn.train.groups import TrainingGroup

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DistilOptions:
    """Hyper-parameters of the student and its training (the manifest records them; the defaults
    are the committed student's, chosen on ``--holdout``: docs/design/reranker.md)."""

    #: encoder layers the student runs (its first ``depth``)
    depth: int = 6
    #: the student's top N layers get LoRA (0 or N >= ``depth``: all); the ones below are the teacher's,
    #: frozen and cached
    layers: int = 2
    #: the teacher's rank: the warm start needs it
    rank: int = 16
    scale: float = 2.0
    lr: float = 1e-3
    head_lr: float = 3e-3
    epochs: int = 1
    #: negatives per group, the first stage's best-ranked non-relevant fact-checks
    negatives: int = 15
    max_length: int = 128
    groups_per_step: int = 2
    #: listwise KL(teacher || student) over each group
    kl_weight: float = 1.0
    #: mean squared error to the teacher's logits
    mse_weight: float = 0.1
    #: start the adapted layers from the teacher's deltas for them (when the ranks match)
    warm_start: bool = True
    seed: int = 0

    def validated(self, base_layers: int | None = None) -> DistilOptions:
        top = base_layers or 48
        if not 1 <= self.depth <= top:
            raise BadInput(f"--depth must be in 1..{top} (the base encoder's layers)")
        if self.layers < 0:
            raise BadInput("--layers must be >= 0 (0: every layer of the student)")
        if not 1 <= self.rank <= 64 or self.scale <= 0:
            raise BadInput("--rank must be in 1..64 and --scale > 0")
        if self.epochs < 1 or self.negatives < 1 or self.groups_per_step < 1:
            raise BadInput("--epochs, --negatives and --groups-per-step must be >= 1")
        if not 16 <= self.max_length <= 512:
            raise BadInput("--max-length must be between 16 and 512")
        if not 0 < self.lr <= 1e-2 or not 0 < self.head_lr <= 1e-1:
            raise BadInput("--lr in (0, 0.01], --head-lr in (0, 0.1]")
        if self.kl_weight < 0 or self.mse_weight < 0 or self.kl_weight + self.mse_weight == 0:
            raise BadInput("--kl-weight and --mse-weight must be >= 0, and not both 0")
        return self

    @property
    def adapted(self) -> int:
        """How many of the student's top layers carry LoRA (all of them when it has no more
        than ``layers``)."""
        return min(self.layers, self.depth) if self.layers else self.depth

    def scorer_options(self) -> Any:
        """What ``lora.PairScorer`` reads (rank, adapted layers, scale, seed)."""
        from plugin.learn.train.lora import LoraRerankerOptions

        return LoraRerankerOptions(rank=self.rank, layers=self.adapted, scale=self.scale, lr=self.lr,
                                   head_lr=self.head_lr, epochs=self.epochs, negatives=self.negatives,
                                   max_length=self.max_length, groups_per_step=self.groups_per_step,
                                   seed=self.seed)


# -- the loss (pure: ``xp`` is numpy or jax.numpy) -------------------------------------------------
def log_softmax(xp: Any, z: Any) -> Any:
    z = z - z.max(axis=-1, keepdims=True)
    return z - xp.log(xp.exp(z).sum(axis=-1, keepdims=True))


def distil_loss(xp: Any, student: Any, teacher: Any, *, kl_weight: float, mse_weight: float) -> Any:
    """``kl_weight * mean_groups KL(softmax(teacher) || softmax(student)) + mse_weight *
    mean((student - teacher)^2)`` for ``[groups, pairs]`` logits: 0 when they are equal; the KL
    term ignores a common offset, the MSE term does not."""
    lt, ls = log_softmax(xp, teacher), log_softmax(xp, student)
    kl = (xp.exp(lt) * (lt - ls)).sum(axis=-1).mean()
    return kl_weight * kl + mse_weight * ((student - teacher) ** 2).mean()


# -- the teacher's targets -------------------------------------------------------------------------
def group_passages(g: TrainingGroup, negatives: int) -> list[str]:
    """A group's passages as the student sees them: the positive first, then its negatives."""
    return [g.positive, *g.negatives[:negatives]]


def teacher_key(teacher_digest: str, model_file: str, groups: Sequence[TrainingGroup], max_length: int) -> str:
    """What a cached file of teacher logits is valid for: the teacher's adapter and graph file, and
    the text of every pair a group may give (pure)."""
    h = hashlib.sha256(f"{teacher_digest}|{model_file}|{max_length}".encode())
    for g in groups:
        h.update("\x1e".join([g.query, g.positive, *g.negatives]).encode("utf-8"))
        h.update(b"\x1d")
    return h.hexdigest()[:20]


def teacher_logits(settings: Any, teacher: str, groups: Sequence[TrainingGroup], negatives: int,
                   *, folder: Path | None = None, cache_dir: Path | None = None) -> tuple[list[np.ndarray], dict[str, Any]]:
    """The teacher's logits for each group's passages (``group_passages``), from its built ONNX
    folder as served (``model build`` builds it if it is missing: the int8 graph when its manifest
    says int8). Kept in ``<cache_dir>/factsieve-distil-teacher-<key>.npz`` (default: the temp
    folder), so a rerun on the same teacher and groups with as many negatives or fewer reads them
    back."""
    from plugin.build.adapted import build_lora_reranker
    from plugin.embedding.query_tower import adapter_digest
    from plugin.search.lora_reranker import find_reranker_adapter, reranker_adapter_dir
    from plugin.search.rerank import OnnxCrossEncoder

    adapter = find_reranker_adapter(teacher, folder)
    built = build_lora_reranker(settings, teacher, folder=folder)
    max_length = int(adapter.manifest.get("max_length", 128))
    model = OnnxCrossEncoder(built, max_seq_length=max_length, activation="none")
    key = teacher_key(adapter_digest(teacher, folder or reranker_adapter_dir()), model.model_path.name,
                      groups, max_length)
    path = Path(cache_dir or tempfile.gettempdir()) / f"factsieve-distil-teacher-{key}.npz"
    info: dict[str, Any] = {"teacher": teacher, "graph": model.model_path.name, "cache": str(path)}
    flat = None
    if path.is_file():
        with np.load(path) as z:
            if int(z["negatives"]) >= negatives:
                flat, sizes = z["logits"], z["sizes"]
    if flat is not None:
        info["cached"] = True
    else:
        t0, parts = time.perf_counter(), []
        for g in groups:
            parts.append(model.logits(g.query, group_passages(g, negatives)))
        sizes = np.array([len(p) for p in parts], np.int64)
        flat = np.concatenate(parts) if parts else np.zeros(0, np.float32)
        info.update(cached=False, seconds=round(time.perf_counter() - t0, 1),
                    ms_per_pair=round(1e3 * (time.perf_counter() - t0) / max(len(flat), 1), 2))
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as fh:
            np.savez(fh, logits=flat, sizes=sizes, negatives=np.int64(negatives))
    ends = np.cumsum(sizes)
    return [flat[e - n:e][:1 + negatives].astype(np.float32) for n, e in zip(sizes.tolist(), ends.tolist())], info


# -- the student -----------------------------------------------------------------------------------
def layer_of(weight: str) -> int:
    """``encoder.layer.7.attention.self.query.weight`` -> 7."""
    return int(weight.split(".")[2])


def teacher_deltas(teacher: Any, layers: range, rank: int, scale: float) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The teacher's deltas for the weights of ``layers``, their B rescaled from the teacher's
    LoRA scale to ``scale``; none when the teacher's rank is not ``rank`` (pure)."""
    if teacher.rank != rank:
        return {}
    return {w: (np.asarray(a, np.float32), np.asarray(b, np.float32) * (teacher.scale / scale))
            for w, (a, b) in teacher.deltas.items() if layer_of(w) in layers}


def warm_from_teacher(jnp: Any, deltas: dict[str, tuple[np.ndarray, np.ndarray]], lora: dict[str, Any]
                      ) -> tuple[dict[str, Any], int]:
    """``lora`` with each delta ``deltas`` has at the same name and shapes in its place, and how
    many were."""
    out, n = dict(lora), 0
    for name, (a0, b0) in lora.items():
        if name in deltas and deltas[name][0].shape == a0.shape and deltas[name][1].shape == b0.shape:
            out[name] = (jnp.asarray(deltas[name][0]), jnp.asarray(deltas[name][1]))
            n += 1
    return out, n


def train_student(jax: Any, scorer: Any, cached: Sequence[Sequence[np.ndarray]],
                  targets: Sequence[np.ndarray], options: DistilOptions,
                  on_epoch: Callable[[int, float, dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Adam (LoRA at ``lr``, the head at ``head_lr``), 10-step warm-up then linear decay; each step
    takes ``groups_per_step`` whole groups and ``distil_loss`` against their teacher logits
    (``lora.fit_groups``, the loop the LoRA trainer uses)."""
    from plugin.learn.train.lora import fit_groups

    jnp = jax.numpy
    size = 1 + options.negatives

    def loss_fn(params: Any, x: Any, m: Any, t: Any) -> Any:
        s = scorer.logits(params, x, m).reshape(-1, size)
        return distil_loss(jnp, s, t, kl_weight=options.kl_weight, mse_weight=options.mse_weight)

    return fit_groups(jax, scorer, cached, options, loss_fn, targets=targets, on_epoch=on_epoch, log_every=50)


def agreement(student: Sequence[np.ndarray], teacher: Sequence[np.ndarray]) -> dict[str, float]:
    """How the student ranks each group against the teacher: the same passage first (top-1
    agreement) and mean Spearman correlation (pure)."""
    from plugin.lab.reranker.export import spearman

    top1 = [int(np.argmax(s)) == int(np.argmax(t)) for s, t in zip(student, teacher)]
    rho = [spearman(s, t) for s, t in zip(student, teacher)]
    return {"top1_agreement": round(float(np.mean(top1)), 4) if top1 else 0.0,
            "mean_spearman": round(float(np.mean(rho)), 4) if rho else 0.0}


# -- the command -----------------------------------------------------------------------------------
def train_distilled_reranker(settings: Any, source: Any, teacher: str, name: str | None = None,
                             out: Any = None, options: DistilOptions | None = None, *,
                             holdout: bool = False, teacher_folder: Path | None = None,
                             teacher_cache: Path | None = None) -> dict[str, Any]:
    """Train a student of ``teacher`` on ``source``'s groups (``GroupSource``: the training
    queries' mined groups) and write ``<out>/<name>.npz`` + ``.json`` (default
    ``build/artefacts/rerankers/``, never into the package; name ``<teacher>-distil<depth>``).
    With ``holdout`` the sha1-chosen slice of the training queries (``lora.holdout_group``) is
    kept out and scored each epoch against its positives and against the teacher; nothing is
    written then."""
    from datetime import datetime, timezone

    from plugin.build.adapted import read_base_weights
    from plugin.embedding.adapter import QueryAdapter, save_adapter
    from plugin.embedding.onnx_backend import open_tokenizer
    from plugin.embedding.query_tower import base_model_dir, check_base
    from plugin.learn.train.tower import load_jax
    from plugin.lab.reranker.lora import (CHECK_GROUPS, INT8_MIN_TOP1, adapter_manifest, int8_agreement,
                                          split_groups)
    from plugin.learn.train.lora import PairScorer, encode_pairs, group_map5
    from plugin.artefacts import RERANKERS, outside_package, written_dir
    from plugin.search.lora_reranker import find_reranker_adapter, reranker_adapter_dir

    options = (options or DistilOptions()).validated()
    name = name or f"{teacher}-distil{options.depth}"
    folder = outside_package(Path(out) if out is not None else written_dir(RERANKERS), "--out")
    if name == teacher and folder.resolve() == Path(teacher_folder or reranker_adapter_dir()).resolve():
        raise BadInput(f"--name {name!r} is the teacher's: the student would overwrite it")
    t_start = time.perf_counter()
    teacher_adapter = find_reranker_adapter(teacher, teacher_folder)
    check_base(teacher_adapter, settings, what="reranker", retrain="`factsieve train-reranker lora`")
    groups, meta = source.load(settings)
    base = base_model_dir(settings)
    shape, weights = read_base_weights(base)
    options = options.validated(shape.layers)
    fit_groups, held_groups = split_groups(groups, holdout=holdout)
    if not fit_groups:
        raise BadInput("no training groups left to fit on")

    t0 = time.perf_counter()
    targets, teacher_info = teacher_logits(settings, teacher, groups, options.negatives,
                                           folder=teacher_folder, cache_dir=teacher_cache)
    teacher_info["load_or_score_seconds"] = round(time.perf_counter() - t0, 1)
    by_group = {id(g): t for g, t in zip(groups, targets)}
    fit_t, held_t = [by_group[id(g)] for g in fit_groups], [by_group[id(g)] for g in held_groups]

    jax = load_jax()
    first = options.depth - options.adapted
    # warm start: the frozen layers are the teacher's (merged here, written with the student), the
    # adapted ones start from the teacher's deltas for them
    frozen = teacher_deltas(teacher_adapter, range(first), options.rank, options.scale) \
        if options.warm_start else {}
    if frozen:
        weights = QueryAdapter("frozen", frozen, options.scale).merged(weights)
    scorer = PairScorer(jax, dataclasses.replace(shape, layers=options.depth), weights, options.scorer_options())
    warmed = 0
    if options.warm_start:
        scorer.params["lora"], warmed = warm_from_teacher(
            scorer.jnp, teacher_deltas(teacher_adapter, range(first, options.depth), options.rank, options.scale),
            scorer.params["lora"])
    # the classifier starts at the teacher's mean logit: every pair at the teacher's average score
    scorer.params["head"]["classifier.bias"] = scorer.jnp.full(1, float(np.mean(np.concatenate(fit_t))))
    tok, _pad, _len = open_tokenizer(base, options.max_length)

    t0 = time.perf_counter()
    fit_cache = scorer.cache_groups(encode_pairs(tok, fit_groups, options.negatives))
    held_cache = scorer.cache_groups(encode_pairs(tok, held_groups, options.negatives))
    cache_s = time.perf_counter() - t0
    history: list[dict[str, Any]] = []
    teacher_held = {"holdout_teacher_group_MAP@5": group_map5(held_t)} if held_t else {}

    def on_epoch(epoch: int, loss: float, info: dict[str, Any]) -> None:
        row: dict[str, Any] = {"epoch": epoch, "loss": round(loss, 4), "seconds": info["seconds"]}
        if held_cache:
            scores = [scorer.score(info["params"], g) for g in held_cache]
            row.update({"holdout_group_MAP@5": group_map5(scores), **teacher_held,
                        **{f"holdout_{k}": v for k, v in agreement(scores, held_t).items()}})
        history.append(row)
        log.info("epoch %d: %s", epoch, row)

    t0 = time.perf_counter()
    params = train_student(jax, scorer, fit_cache, fit_t, options, on_epoch)
    train_s = time.perf_counter() - t0
    seconds = {"teacher_logits": teacher_info.get("seconds", 0.0), "cache": round(cache_s, 1),
               "train": round(train_s, 1), "total": round(time.perf_counter() - t_start, 1)}
    result: dict[str, Any] = {"name": name, "teacher": teacher_info, "dataset": meta.get("dataset_name"),
                              "training_groups": len(fit_groups), "holdout_groups": len(held_groups),
                              "warm_started_deltas": warmed, "frozen_teacher_deltas": len(frozen),
                              "options": asdict(options),
                              "history": history, "seconds": seconds}
    if holdout:
        return result
    deltas = {**frozen, **{k: (np.asarray(a), np.asarray(b)) for k, (a, b) in params["lora"].items()}}
    head = {k: np.asarray(v) for k, v in params["head"].items()}
    manifest = {
        **adapter_manifest(settings, meta, {g.query_id for g in fit_groups}, options.max_length),
        "depth": options.depth, "teacher": teacher,
        "layers": list(range(first, options.depth)), "warm_started_deltas": warmed,
        "frozen_teacher_deltas": len(frozen),
        "options": asdict(options), "history": history, "seconds": seconds, "trained_on": "CPU (JAX)",
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    save_adapter(folder, name, deltas, options.scale, manifest, whole=head)
    # int8 is served only where it ranks like fp32 (``lora.int8_agreement``, as ``lora`` checks)
    t0 = time.perf_counter()
    check = int8_agreement(settings, name, folder, fit_groups[:CHECK_GROUPS])
    check["seconds"] = round(time.perf_counter() - t0, 1)
    manifest.update(int8=check["top1_agreement"] >= INT8_MIN_TOP1, int8_check=check)
    path = save_adapter(folder, name, deltas, options.scale, manifest, whole=head)
    result.update(path=str(path), bytes=path.stat().st_size, int8_check=check, int8=manifest["int8"])
    return result
