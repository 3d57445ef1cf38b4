"""``factsieve learn reranker``: fine-tune a tenant's challenger reranker and put it through the
gate (a production step: imported by the CLI only, never by serving code).

It trains with the lab's JAX trainer (``plugin.learn.train.lora``) and builds with the model
builder (``plugin.build``), which serving code must not import; this module is the one place
``plugin.learn`` meets them, and nothing under ``plugin.search``, ``plugin.service`` or the
serving parts of ``plugin.learn`` imports it.

**What is trained.** The packaged LoRA adapter of the configuration's reranker is the start (warm
start: its deltas and head, ``lora.warm_params``). Its deltas on the bottom layers are merged
into the frozen encoder; the top ``TRAIN_LAYERS`` layers' deltas and the head are fine-tuned on
the tenant's decided posts (``plugin.learn.reranker_data``: confirmed positive, the other shown
and rejected candidates as hard negatives) plus a replay of the packaged adapter's training
groups (the reference dataset's ``train`` queries, mined with the first stage it was trained
behind), listwise as it was trained. Every run starts from the packaged adapter and learns from
the whole log, so a champion never drifts from a chain of fine-tunes.

**Gate.** The champion (the tenant's current one, or the packaged adapter) and the challenger
score the same evaluation groups: the tenant's held-out decided posts (their shown candidates)
and the reference dataset's ``dev`` queries (positive among the first stage's top
``DEV_CANDIDATES``); ``reranker_gate.decide`` says whether the challenger is promoted. Only then
is its ONNX folder built and the champion record swapped (``reranker_store.Champions``); a
failure anywhere before that leaves the champion serving. Every attempt is logged.
"""
from __future__ import annotations

import logging
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from plugin.errors import BadInput, FactSieveError
from plugin.learn.reranker_data import (DecisionGroup, decision_groups, factcheck_ids, fetch_passages,
                                        split, with_texts)
from plugin.learn.reranker_gate import MAX_LANGUAGE_DROP, MIN_GAIN, decide, map_at_5
from plugin.learn.reranker_store import now, tenant_dir

if TYPE_CHECKING:
    from plugin.embedding import Embedder
    from plugin.index.store import Store
    from plugin.learn.reranker_store import Champions
    from plugin.review.desk import ReviewDesk
    from plugin.search.retrieval import RetrievalConfig
    from plugin.settings import Settings

log = logging.getLogger(__name__)

#: the top encoder layers fine-tuned (their LoRA deltas and the head); the layers below keep the
#: packaged deltas, merged and frozen, so their output is computed once per pair
TRAIN_LAYERS = 2
#: hard negatives per training group (a decision shows five candidates: four beside the right one;
#: a group with fewer repeats its negatives to this size, a replay group keeps its best-ranked)
NEGATIVES = 4
#: candidates per reference dev query in the gate's evaluation set (the first stage's top ones)
DEV_CANDIDATES = 10
#: a tenant needs at least this many decided posts to train on, and this many held out
MIN_TRAIN_GROUPS, MIN_HELD_GROUPS = 20, 5
#: the reference dataset (train: replay; dev: the packaged evaluation set), from the repository
REFERENCE_DATASET = Path("samples/clef2020")


@dataclass(frozen=True)
class LearnOptions:
    epochs: int = 1
    lr: float = 1e-4
    head_lr: float = 3e-4
    seed: int = 0
    #: train with each group's positive and first negative swapped: a model made worse on
    #: purpose, to see the gate refuse it
    flip_labels: bool = False
    min_gain: float = MIN_GAIN
    reference: Path = REFERENCE_DATASET
    config: str = "hybrid-rerank"
    #: where JAX trains: ``cpu``, or ``auto`` for the accelerator JAX finds (a GPU where the
    #: CUDA build of jax is installed, the CPU otherwise); the device is recorded with the attempt
    device: str = "cpu"

    def validated(self) -> LearnOptions:
        if not 1 <= self.epochs <= 20:
            raise BadInput("--epochs must be between 1 and 20")
        if self.device not in ("cpu", "auto"):
            raise BadInput(f"--device must be cpu or auto, got {self.device!r}")
        if not self.reference.joinpath("queries.jsonl").is_file():
            raise BadInput(f"--reference {self.reference}: no queries.jsonl there")
        return self


@dataclass(frozen=True)
class RerankerParts:
    """What a reranker update uses: the decision log (``desk``), the fact-check store and the
    embedder (texts, and mining the reference groups), the tenants' champions, the settings, and
    the named retrieval configurations (``config``: a name to its ``RetrievalConfig``)."""

    desk: ReviewDesk
    store: Store
    embedder: Embedder
    champions: Champions
    settings: Settings
    config: Callable[[str], RetrievalConfig]


def padded(negatives: tuple[str, ...], size: int) -> tuple[str, ...]:
    """``negatives`` cut or repeated (in order) to ``size`` (pure)."""
    return tuple(negatives[i % len(negatives)] for i in range(size)) if negatives else ()


def as_training(g: DecisionGroup, passages: dict[str, str], *, flip: bool = False) -> Any:
    from plugin.learn.train.groups import TrainingGroup
    from plugin.search.normalize import normalize_post

    pos, negs = passages[g.positive], [passages[n] for n in g.negatives]
    if flip:
        pos, negs = negs[0], [pos, *negs[1:]]
    return TrainingGroup(g.post_id, normalize_post(g.text) or g.text.strip(), pos, tuple(negs))


def reference_groups(parts: RerankerParts, options: LearnOptions, first_stage: str) -> dict[str, Any]:
    """The reference dataset's ``train`` groups (replay) and ``dev`` groups (evaluation), mined
    with the first stage over its evaluation index (built once, reused)."""
    from plugin.learn.train.datasets import ensure_dataset_index, load_dataset
    from plugin.learn.train.groups import mine_groups
    from plugin.search.matcher import Matcher

    dataset = load_dataset(options.reference)
    store, embedder, settings = parts.store, parts.embedder, parts.settings
    alias, _ = ensure_dataset_index(store, embedder, dataset, settings)
    matcher = Matcher(store, embedder, settings, alias=alias, config=first_stage)
    out: dict[str, Any] = {"langs": {str(q["id"]): q.get("lang") or "" for q in dataset.queries}}
    for part, depth in (("train", 50), ("dev", DEV_CANDIDATES)):
        ids = [str(q["id"]) for q in dataset.queries if q.get("split") == part]
        out[part] = mine_groups(matcher, store, alias, dataset.queries, dataset.qrels["all"], ids,
                                depth=depth)
    return out


def learn_reranker(parts: RerankerParts, tenant: str, options: LearnOptions = LearnOptions()) -> dict[str, Any]:
    """Train, gate, and (when it wins) promote the tenant's challenger; the attempt's report,
    also logged (a failure is logged with its reason and raised; the champion keeps serving)."""
    options = options.validated()
    started, cpu0, t0 = now(), time.process_time(), time.perf_counter()
    try:
        report = _attempt(parts, tenant, options)
    except Exception as exc:  # logged whatever it was; the champion record was not touched
        reason = exc.detail if isinstance(exc, FactSieveError) else f"{type(exc).__name__}: {exc}"
        parts.champions.log_attempt(tenant, {"at": started, "failed": reason, "promoted": False})
        raise
    report.update(tenant=tenant, at=started, seconds={**report["seconds"],
                  "total": round(time.perf_counter() - t0, 1),
                  "cpu": round(time.process_time() - cpu0, 1)})
    parts.champions.log_attempt(tenant, {k: report[k] for k in (
        "at", "version", "promoted", "reason", "champion", "challenger", "groups", "seconds",
        "trained_on")})
    return report


def _attempt(parts: RerankerParts, tenant: str, options: LearnOptions) -> dict[str, Any]:
    from plugin.build.adapted import build_lora_reranker, read_base_weights
    from plugin.embedding.onnx_backend import open_tokenizer
    from plugin.embedding.query_tower import adapter_digest, base_model_dir
    from plugin.learn.train.tower import load_jax
    from plugin.learn.train.lora import LoraRerankerOptions, PairScorer, encode_pairs, train, warm_params
    from plugin.learn.calibration_store import tenant_decisions
    from plugin.search.lora_reranker import find_reranker_adapter, packaged_rerankers, reranker_adapter_dir

    settings, seconds = parts.settings, {}
    cfg = parts.config(options.config)
    name = Path(cfg.rerank.model).name if cfg.rerank else None
    if name not in packaged_rerankers():
        raise BadInput(f"configuration {cfg.name!r} does not rerank with a packaged LoRA adapter")

    t = time.perf_counter()
    groups = decision_groups(tenant_decisions(parts.desk, tenant))
    passages = fetch_passages(parts.store, settings.index, factcheck_ids(groups))
    fit, held = split(with_texts(groups, passages))
    if len(fit) < MIN_TRAIN_GROUPS or len(held) < MIN_HELD_GROUPS:
        raise BadInput(f"tenant {tenant!r} has {len(fit)} decided posts to train on and {len(held)} "
                       f"held out; a reranker update needs {MIN_TRAIN_GROUPS} and {MIN_HELD_GROUPS} "
                       "(a confirm with other candidates shown)")
    packaged = find_reranker_adapter(name)
    ref = reference_groups(parts, options, str(packaged.manifest.get("first_stage") or "factsieve"))
    seconds["data"] = round(time.perf_counter() - t, 1)

    t = time.perf_counter()
    jax = load_jax(None if options.device == "auto" else options.device)
    device = jax.devices()[0]
    trained_on = f"{device.platform.upper()} (JAX, {getattr(device, 'device_kind', device.platform)})"
    base = base_model_dir(settings)
    shape, weights = read_base_weights(base)
    first = shape.layers - TRAIN_LAYERS
    top = tuple(f"encoder.layer.{i}." for i in range(first, shape.layers))
    merged = packaged.merged(weights)
    frozen = {k: (weights[k] if k.startswith(top) else merged[k]) for k in weights}
    popts = packaged.manifest.get("options") or {}
    lopts = LoraRerankerOptions(rank=packaged.rank, layers=TRAIN_LAYERS, scale=packaged.scale,
                                lr=options.lr, head_lr=options.head_lr, epochs=options.epochs,
                                negatives=NEGATIVES, max_length=int(popts.get("max_length", 128)),
                                groups_per_step=int(popts.get("groups_per_step", 2)), seed=options.seed)
    scorer = PairScorer(jax, shape, frozen, lopts, start=packaged)
    tok, _pad, _len = open_tokenizer(base, lopts.max_length)
    start = {"name": name, "sha256": adapter_digest(name, reranker_adapter_dir())}
    record = parts.champions.get(tenant)
    champion_params = scorer.params
    if record and record.get("start") == start:
        champ = find_reranker_adapter(record["adapter"], tenant_dir(settings, tenant) / record["version"] / "adapter")
        champion_params = warm_params(jax.numpy, champ, scorer.params)

    fit_groups = [as_training(g, passages, flip=options.flip_labels) for g in fit]
    fit_groups = [type(g)(g.query_id, g.query, g.positive, padded(g.negatives, NEGATIVES)) for g in fit_groups]
    fit_groups += [g for g in ref["train"] if len(g.negatives) >= NEGATIVES]
    evals = [as_training(g, passages) for g in held] + ref["dev"]
    langs = [g.lang for g in held] + [ref["langs"].get(g.query_id, "") for g in ref["dev"]]
    wide = max(len(g.negatives) for g in evals)
    fit_cache = scorer.cache_groups(encode_pairs(tok, fit_groups, NEGATIVES))
    eval_cache = scorer.cache_groups(encode_pairs(tok, evals, wide))
    seconds["encode"] = round(time.perf_counter() - t, 1)

    def scores(params: Any) -> dict[str, Any]:
        every = [(lang, scorer.score(params, c).tolist()) for lang, c in zip(langs, eval_cache)]
        n = len(held)
        return {**map_at_5(every), "held_out": map_at_5(every[:n])["MAP@5"],
                "dev": map_at_5(every[n:])["MAP@5"]}

    t = time.perf_counter()
    champion = scores(champion_params)
    params = train(jax, scorer, fit_cache, lopts)
    challenger = scores(params)
    seconds["train"] = round(time.perf_counter() - t, 1)
    verdict = decide(champion, challenger, min_gain=options.min_gain, max_language_drop=MAX_LANGUAGE_DROP)
    version = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
    report: dict[str, Any] = {
        "version": version, "promoted": False, "reason": verdict.reason,
        "champion": champion, "challenger": challenger,
        "champion_version": record["version"] if record else "packaged",
        "groups": {"train": len(fit), "held_out": len(held), "replay": len(ref["train"]),
                   "dev": len(ref["dev"]), "trained": len(fit_groups)},
        "options": {**asdict(options), "reference": str(options.reference)}, "seconds": seconds,
        "trained_on": trained_on}
    if not verdict.promote:
        return report

    t = time.perf_counter()
    folder = tenant_dir(settings, tenant) / version
    adapter_name = f"{name}-{tenant}"
    deltas = {k: v for k, v in packaged.deltas.items() if not k.startswith(top)}
    deltas.update({k: (np.asarray(a), np.asarray(b)) for k, (a, b) in params["lora"].items()})
    manifest = {**{k: v for k, v in packaged.manifest.items() if k not in (
                    "name", "scale", "rank", "weights", "whole", "int8_check", "history", "seconds")},
                "int8": False, "trained_on": trained_on, "created_at": now(),
                "fine_tuned": {"tenant": tenant, "start": start, "layers": list(range(first, shape.layers)),
                               "groups": report["groups"], "options": report["options"],
                               "champion": champion, "challenger": challenger}}
    try:
        from plugin.embedding.adapter import save_adapter

        save_adapter(folder / "adapter", adapter_name, deltas, packaged.scale, manifest,
                     whole={k: np.asarray(v) for k, v in params["head"].items()})
        build_lora_reranker(settings, adapter_name, folder=folder / "adapter", dest=folder / "model")
    except Exception:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    seconds["build"] = round(time.perf_counter() - t, 1)
    parts.champions.promote(tenant, {
        "tenant": tenant, "version": version, "adapter": adapter_name, "start": start,
        "model": str((folder / "model").relative_to(settings.model_cache_dir)),
        "promoted_at": now(), "champion": champion, "challenger": challenger,
        "replaced": report["champion_version"], "groups": report["groups"]})
    report["promoted"] = True
    return report
