"""``factsieve train-verdict --kind cross-encoder``: fine-tune the verdict model
(``plugin.verify.verdict_model``), a cross-encoder classifier over (claim and date, evidence) →
the four labels, from the packaged encoder with LoRA on the reranker's training path (JAX: the
frozen bottom layers cached once per example, ``lora.PairScorer`` with a four-label head).

Trained only on tuning data, as the head is: AVeriTeC's shared dev split plus Climate-FEVER and
LIAR-PLUS with the label mappings of ``plugin.lab.verdict``. The loss is cross-entropy weighted
class-balanced within each dataset, AVeriTeC's examples summing to 1 and each other dataset's to
``extra_weight`` (the head's weighting), so the rare labels (Conflicting/Cherrypicking, Not
Enough Evidence) weigh as much as the common ones.

Chosen by cross-validation: ``stratified_folds`` over the AVeriTeC claims (the same folds the
head's CV uses for the same shuffle), the other datasets in every training fold; the fold
models also rate the held-out claims' retrieved evidence when a predictions file with evidence
is given, so both evidence conditions are out of fold. The head is refitted on the same folds
for the comparison. The final model is trained on everything and committed as an adapter
(``plugin/artefacts/verdict/<name>.npz`` + ``.json``) whose manifest holds the CV, the data, the
time and where it was trained; the out-of-fold probabilities are written beside the report for
the blend weight's choice (``factsieve blend-weight``).
"""
from __future__ import annotations

import logging
import math
import platform
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from plugin.errors import BadInput
from plugin.learn.train.lora import adam_step
from plugin.lab.verdict import (LABEL_MAPS, LOADERS, TARGET, Example, _cpus, metrics,
                                sample_weights, stratified_folds)
from plugin.verify.scoring import LABELS
from plugin.verify.verdict_model import INPUT_VERSION, KIND, claim_segment, evidence_segment

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class XencOptions:
    """Hyper-parameters of the fine-tuned verdict model."""

    rank: int = 8
    #: the top N encoder layers carry LoRA deltas; the ones below are frozen and cached
    layers: int = 2
    scale: float = 2.0
    lr: float = 5e-4
    head_lr: float = 2e-3
    epochs: int = 3
    max_length: int = 192
    batch: int = 16
    #: each non-AVeriTeC dataset's total loss weight against AVeriTeC's 1
    extra_weight: float = 0.3
    #: at most this many examples of each non-AVeriTeC dataset (a label-stratified sample; 0: all),
    #: so that a fold trains in minutes on two cores
    extra_cap: int = 600
    seed: int = 0

    def validated(self) -> XencOptions:
        if not 1 <= self.rank <= 64 or not 1 <= self.layers <= 48 or self.epochs < 1 or self.batch < 1:
            raise BadInput("--rank 1..64, --layers 1..depth, --epochs >= 1 and --batch >= 1")
        if not 32 <= self.max_length <= 512:
            raise BadInput("--max-length must be between 32 and 512")
        if not 0 <= self.extra_weight <= 10:
            raise BadInput("--extra-weight must be between 0 and 10")
        return self


def capped(examples: Sequence[Example], cap: int, seed: int) -> list[Example]:
    """At most ``cap`` of ``examples`` (all when ``cap`` is 0 or more than there are), each label
    keeping its share, in their original order (pure given ``seed``)."""
    if not cap or len(examples) <= cap:
        return list(examples)
    rng = np.random.default_rng(seed)
    keep: list[int] = []
    by_label = Counter(ex.label for ex in examples)
    for label in sorted(by_label):
        idx = [i for i, ex in enumerate(examples) if ex.label == label]
        keep += list(rng.choice(idx, round(cap * len(idx) / len(examples)), replace=False))
    return [examples[i] for i in sorted(keep)]


def pair_texts(examples: Sequence[Example]) -> list[tuple[str, str]]:
    """Each example as the model reads it (``claim_segment``, ``evidence_segment``)."""
    return [(claim_segment(ex.claim, ex.date), evidence_segment(ex.pairs)) for ex in examples]


def loss_weights(y: np.ndarray, source: np.ndarray, extra_weight: float) -> np.ndarray:
    """Per-example loss weights scaled to mean 1 (``sample_weights``: class-balanced within each
    dataset; AVeriTeC sums to 1, each other dataset to ``extra_weight``)."""
    w = sample_weights(y, source, extra_weight)
    return w * (len(w) / w.sum())


def length_batches(lengths: Sequence[int], batch: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Batches of similar length (less padding), in random order: the examples shuffled, cut into
    chunks of ``50 · batch``, each sorted by length and cut into batches (pure given ``rng``)."""
    order = rng.permutation(len(lengths))
    out = []
    for start in range(0, len(order), 50 * batch):
        chunk = order[start:start + 50 * batch]
        chunk = chunk[np.argsort([lengths[i] for i in chunk], kind="stable")]
        out += [chunk[i:i + batch] for i in range(0, len(chunk), batch)]
    return [out[i] for i in rng.permutation(len(out))]


def bucket(length: int) -> int:
    """A batch's padded width: the next multiple of 64, so a training run compiles a few shapes."""
    return int(math.ceil(length / 64) * 64)


def standardising_pooler(scorer: Any, params: dict[str, Any], cached: Sequence[np.ndarray]) -> dict[str, Any]:
    """``params`` with the pooler starting as the standardisation of the training examples'
    pooled vectors (``(v − mean) / sd`` per dimension, as the head standardises its features).
    The encoder's mean-pooled vectors differ little between examples (e5's embeddings share a
    large common component), so behind an identity pooler the classifier barely moved in
    training; standardised, it starts from features that vary (the loss falls faster; the
    out-of-fold scores measured both ways: docs/design/verdict-model.md)."""
    jnp = scorer.jnp
    fn = scorer.jax.jit(scorer.pooled)
    rows = []
    order = np.argsort([len(c) for c in cached], kind="stable")
    for start in range(0, len(order), 32):
        batch = [cached[i].astype(np.float32) for i in order[start:start + 32]]
        x, m = scorer.tower.pad(batch, bucket(max(len(r) for r in batch)))
        rows.append(np.asarray(fn(params, x, m)))
    pooled = np.concatenate(rows)
    mean, sd = pooled.mean(axis=0), np.maximum(pooled.std(axis=0), 1e-6)
    head = dict(params["head"], **{"pooler.dense.weight": jnp.asarray(np.diag(1.0 / sd), dtype=jnp.float32),
                                   "pooler.dense.bias": jnp.asarray(-mean / sd, dtype=jnp.float32)})
    return {**params, "head": head}


class Trainer:
    """The encoder as JAX functions with a four-label head; ``cache`` once, then ``fit`` per fold."""

    def __init__(self, jax: Any, base: Path, options: XencOptions) -> None:
        from plugin.build.adapted import read_base_weights
        from plugin.embedding.onnx_backend import open_tokenizer
        from plugin.learn.train.lora import LoraRerankerOptions, PairScorer

        self.jax, self.options = jax, options
        self.shape, self.weights = read_base_weights(base)
        self.tok, _pad, _len = open_tokenizer(base, options.max_length)
        self.lopts = LoraRerankerOptions(rank=options.rank, layers=options.layers, scale=options.scale,
                                         lr=options.lr, head_lr=options.head_lr, epochs=options.epochs,
                                         max_length=options.max_length, seed=options.seed)
        self._make = lambda: PairScorer(jax, self.shape, self.weights, self.lopts, num_labels=len(LABELS))
        self.scorer = self._make()

    def cache(self, texts: Sequence[tuple[str, str]]) -> list[np.ndarray]:
        """Hidden states below the adapted layers, per example (fp16), computed in length order."""
        ids = [e.ids for e in self.tok.encode_batch(list(texts))]
        order = np.argsort([len(i) for i in ids], kind="stable")
        flat = self.scorer.cache([ids[i] for i in order])
        out: list[np.ndarray] = [np.empty(0)] * len(ids)
        for j, i in enumerate(order):
            out[i] = flat[j]
        return out

    def fit(self, cached: Sequence[np.ndarray], y: np.ndarray, w: np.ndarray,
            on_epoch: Callable[[int, float, float], None] | None = None) -> Any:
        """Adam (LoRA at ``lr``, the head at ``head_lr``), 10-step warm-up then linear decay, on the
        weighted cross-entropy; a fresh adapter and head every call. Returns the parameters."""
        jax, jnp, tree, o = self.jax, self.jax.numpy, self.jax.tree_util, self.options
        scorer = self._make()

        def loss_fn(params: Any, x: Any, m: Any, yy: Any, ww: Any) -> Any:
            logp = jax.nn.log_softmax(scorer.logits(params, x, m), axis=-1)
            return -(jnp.take_along_axis(logp, yy[:, None], axis=1)[:, 0] * ww).sum() / ww.sum()

        grad_fn = jax.jit(jax.value_and_grad(loss_fn))

        adam = adam_step(jax, o.head_lr / o.lr)

        params = standardising_pooler(scorer, scorer.params, cached)
        m1, m2 = tree.tree_map(jnp.zeros_like, params), tree.tree_map(jnp.zeros_like, params)
        rng = np.random.default_rng(o.seed)
        lengths = [len(c) for c in cached]
        total_steps = o.epochs * math.ceil(len(cached) / o.batch)
        step = 0
        for epoch in range(1, o.epochs + 1):
            t0, total = time.perf_counter(), 0.0
            batches = length_batches(lengths, o.batch, rng)
            for idx in batches:
                rows = [cached[i].astype(np.float32) for i in idx]
                x, m = scorer.tower.pad(rows, bucket(max(len(r) for r in rows)))
                loss, grads = grad_fn(params, x, m, jnp.asarray(y[idx]), jnp.asarray(w[idx], dtype=jnp.float32))
                step += 1
                lr = o.lr * min(1.0, step / 10) * max(0.0, 1 - step / (total_steps + 1))
                params, m1, m2 = adam(params, grads, m1, m2, step, lr)
                total += float(loss)
            if on_epoch is not None:
                on_epoch(epoch, total / max(len(batches), 1), time.perf_counter() - t0)
        self.scorer = scorer
        return params

    def probabilities(self, params: Any, cached: Sequence[np.ndarray]) -> np.ndarray:
        from plugin.verify.head import softmax

        if not cached:
            return np.zeros((0, len(LABELS)))
        logits = self.scorer.score(params, cached, batch=32, widths=bucket)
        return softmax(logits.astype(np.float64))


def read_retrieved(path: Path, claims: Sequence[Example]) -> list[Example]:
    """The claims with the evidence a predictions file (``id``, ``evidence``: ``question`` /
    ``answer`` items, as ``evaluate-verification --out`` and HerO write them) gives them, in the
    claims' order; a claim the file lacks gets no evidence."""
    import json

    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            rows[str(r["id"])] = r
    missing = [c.id for c in claims if c.id not in rows]
    if missing:
        log.warning("%s lacks %d of %d claims (e.g. %s): they are rated without evidence",
                    path.name, len(missing), len(claims), missing[0])
    return [Example(c.id, c.claim, tuple({"question": e.get("question"), "answer": e.get("answer")}
                                          for e in (rows.get(c.id) or {}).get("evidence") or []),
                    c.label, c.source, c.date) for c in claims]


def train_verdict_xenc(settings: Any, datasets: Mapping[str, Path], *, out: Path, name: str,
                       options: XencOptions | None = None, folds: int = 5, shuffles: Sequence[int] = (0,),
                       retrieved: Path | None = None, embedder: Any = None, cv: bool = True,
                       device: str = "cpu", progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Cross-validate (unless ``cv`` is false), train on everything, write the adapter to
    ``out`` (``<name>.npz`` + ``.json``) and the out-of-fold probabilities beside it
    (``<name>.oof-gold.json``, and ``-retrieved`` with ``retrieved``); never into the package.
    ``embedder``: refit the head on the same folds for comparison."""
    from plugin.artefacts import outside_package
    from plugin.embedding.adapter import save_adapter
    from plugin.embedding.query_tower import base_model_dir
    from plugin.learn.train.tower import load_jax

    outside_package(out, "--out")
    say = progress or log.info
    options = (options or XencOptions()).validated()
    if TARGET not in datasets:
        raise BadInput("train-verdict needs the averitec tuning claims (--averitec DIR)")
    if device not in ("cpu", "auto"):
        raise BadInput("--device must be cpu or auto")
    jax = load_jax("cpu" if device == "cpu" else None)
    t_start = time.perf_counter()
    examples = {n: LOADERS[n](Path(p)) if n == TARGET else capped(LOADERS[n](Path(p)), options.extra_cap, options.seed)
                for n, p in datasets.items()}
    names = [TARGET] + sorted(n for n in examples if n != TARGET)
    rows = [ex for n in names for ex in examples[n]]
    source = np.asarray([ex.source for ex in rows])
    y = np.asarray([LABELS.index(ex.label) for ex in rows])
    target = examples[TARGET]
    gold = [ex.label for ex in target]
    trainer = Trainer(jax, base_model_dir(settings), options)
    t0 = time.perf_counter()
    cached = trainer.cache(pair_texts(rows))
    ret_cached = trainer.cache(pair_texts(read_retrieved(Path(retrieved), target))) if retrieved else None
    t_cache = time.perf_counter() - t0
    say(f"cached {len(cached)} examples below layer {trainer.scorer.tower.first} in {t_cache:.0f} s")

    report: dict[str, Any] = {"kind": KIND, "input_version": INPUT_VERSION, "labels": list(LABELS),
                              "max_length": options.max_length, "pooling": "mean",
                              "base_model": settings.embedding_model, "options": asdict(options)}
    oof: dict[str, Any] = {}
    fold_seconds: list[float] = []
    if cv:
        report["cv"], oof, fold_seconds = _cross_validate(trainer, cached, ret_cached, y, source, gold,
                                                          [ex.id for ex in target], folds, shuffles, options, say)
        if embedder is not None:
            report["cv"]["head_same_folds"] = _head_same_folds(embedder, examples, names, folds, shuffles,
                                                               retrieved, gold)
    t0 = time.perf_counter()
    params = trainer.fit(cached, y, loss_weights(y, source, options.extra_weight),
                         lambda e, loss, s: say(f"final: epoch {e} loss {loss:.4f} ({s:.0f} s)"))
    t_final = time.perf_counter() - t0
    report["data"] = {n: {"path": str(datasets[n]), "claims": len(examples[n]),
                          "labels": dict(Counter(ex.label for ex in examples[n])),
                          **({"label_map": LABEL_MAPS[n]} if n in LABEL_MAPS else {})} for n in names}
    report["trained_on"] = _device_name(jax)
    report["seconds"] = {"cache": round(t_cache, 1), "cv_per_fold": round(float(np.mean(fold_seconds)), 1)
                         if fold_seconds else None, "final_training": round(t_final, 1),
                         "total": round(time.perf_counter() - t_start, 1)}
    report["trained"] = {"date": date.today().isoformat(),
                         "machine": f"{platform.machine()}, {_cpus()} CPUs available",
                         "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    deltas = {k: (np.asarray(a), np.asarray(b)) for k, (a, b) in params["lora"].items()}
    head = {k: np.asarray(v) for k, v in params["head"].items()}
    report["layers"] = list(range(trainer.scorer.tower.first, trainer.shape.layers))
    path = save_adapter(Path(out), name, deltas, options.scale, report, whole=head)
    # int8 is served only where it labels the tuning claims as fp32 does
    check = int8_agreement(settings, name, Path(out), pair_texts(target))
    report.update(int8=check["agreement"] >= INT8_MIN_AGREEMENT, int8_check=check)
    path = save_adapter(Path(out), name, deltas, options.scale, report, whole=head)
    report["artifact"] = {"path": str(path), "bytes": path.stat().st_size}
    if oof:  # beside the adapter, not committed: the blend weight's choice reads them
        import json

        for evidence, body in oof.items():
            oof_path = Path(out) / f"{name}.oof-{evidence}.json"
            oof_path.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
            report["artifact"][f"oof_{evidence}"] = str(oof_path)
    return report


def _cross_validate(trainer: Trainer, cached: list[np.ndarray], ret_cached: list[np.ndarray] | None,
                    y: np.ndarray, source: np.ndarray, gold: list[str], ids: list[str], folds: int,
                    shuffles: Sequence[int], options: XencOptions,
                    say: Callable[[str], None]) -> tuple[dict[str, Any], dict[str, Any], list[float]]:
    t_idx = np.flatnonzero(source == TARGET)
    rest = np.flatnonzero(source != TARGET)
    runs: dict[str, list[dict[str, Any]]] = {"gold": [], "retrieved": []}
    oof: dict[str, Any] = {}
    seconds: list[float] = []
    for shuffle in shuffles:
        fold = stratified_folds(gold, folds, shuffle)
        probs = {"gold": np.zeros((len(t_idx), len(LABELS))), "retrieved": np.zeros((len(t_idx), len(LABELS)))}
        for f in range(folds):
            t0 = time.perf_counter()
            test = fold == f
            train = np.concatenate([t_idx[~test], rest])
            params = trainer.fit([cached[i] for i in train], y[train],
                                 loss_weights(y[train], source[train], options.extra_weight),
                                 lambda e, loss, s: say(f"  fold {f} epoch {e}: loss {loss:.4f} ({s:.0f} s)"))
            probs["gold"][test] = trainer.probabilities(params, [cached[i] for i in t_idx[test]])
            if ret_cached is not None:
                probs["retrieved"][test] = trainer.probabilities(
                    params, [ret_cached[i] for i in np.flatnonzero(test)])
            seconds.append(time.perf_counter() - t0)
            m = metrics(probs["gold"][test], [g for g, t in zip(gold, test) if t])
            say(f"cv shuffle {shuffle} fold {f}: macro-F1 {m['macro_f1']:.3f} ({seconds[-1]:.0f} s)")
        runs["gold"].append(metrics(probs["gold"], gold))
        if ret_cached is not None:
            runs["retrieved"].append(metrics(probs["retrieved"], gold))
        if shuffle == shuffles[0]:
            oof = {evidence: {"model": "cross-encoder", "evidence": evidence, "folds": folds,
                              "shuffle": shuffle, "labels": list(LABELS),
                              "claims": {i: {k: round(float(v), 4) for k, v in zip(LABELS, row)}
                                         for i, row in zip(ids, probs[evidence])}}
                   for evidence in (("gold", "retrieved") if ret_cached is not None else ("gold",))}
    cv = {"folds": folds, "shuffles": list(shuffles), "claims": len(gold),
          "gold": summary(runs["gold"])}
    if runs["retrieved"]:
        cv["retrieved"] = summary(runs["retrieved"])
    return cv, oof, seconds


#: int8 is served when it gives fp32's label to at least this share of the tuning claims.
INT8_MIN_AGREEMENT = 0.98


def int8_agreement(settings: Any, name: str, folder: Path, texts: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """Build adapter ``name`` (from ``folder``) into fp32 and int8 graphs in a scratch folder and
    compare them on ``texts``: the share given the same label, the largest probability gap, and
    the time each takes per claim."""
    import tempfile

    from plugin.build.adapted import build_verdict_model
    from plugin.verify.head import softmax
    from plugin.verify.verdict_model import CrossEncoderVerdictModel

    with tempfile.TemporaryDirectory(prefix="factsieve-int8-check-") as tmp:
        built = build_verdict_model(settings, name, folder=folder, dest=Path(tmp) / name, int8=True)
        probs, secs = {}, {}
        for kind, file in (("fp32", "model"), ("int8", "model_int8")):
            model = CrossEncoderVerdictModel(built, model_file=built / "onnx" / f"{file}.onnx")
            t0 = time.perf_counter()
            probs[kind] = softmax(model.logits(texts).astype(np.float64))
            secs[kind] = time.perf_counter() - t0
    same = probs["fp32"].argmax(axis=1) == probs["int8"].argmax(axis=1)
    return {"claims": len(texts), "agreement": round(float(same.mean()), 4),
            "max_probability_gap": round(float(np.abs(probs["fp32"] - probs["int8"]).max()), 4),
            "ms_per_claim": {k: round(1e3 * v / max(len(texts), 1), 1) for k, v in secs.items()}}


def summary(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Mean and sd over shuffles; per-class F1 means; the first shuffle's confusion matrix."""
    def mean_sd(key: str) -> dict[str, float]:
        v = np.asarray([r[key] for r in runs])
        return {"mean": round(float(v.mean()), 4), "sd": round(float(v.std()), 4)}

    return {"accuracy": mean_sd("accuracy"), "macro_f1": mean_sd("macro_f1"),
            "per_class_f1": {k: round(float(np.mean([r["per_class_f1"][k] for r in runs])), 4) for k in LABELS},
            "confusion_first_shuffle": runs[0]["confusion"]}


def _head_same_folds(embedder: Any, examples: Mapping[str, list[Example]], names: list[str], folds: int,
                     shuffles: Sequence[int], retrieved: Path | None, gold: list[str]) -> dict[str, Any]:
    """The verdict head refitted on the same folds (its features, its weighting), for comparison."""
    from plugin.lab.verdict import EXTRA_WEIGHT, L2, cross_validate
    from plugin.verify.head import featurize

    rows = [ex for n in names for ex in examples[n]]
    x = featurize(embedder, [(ex.claim, ex.pairs) for ex in rows])
    y = np.asarray([LABELS.index(ex.label) for ex in rows])
    source = np.asarray([ex.source for ex in rows])
    rate = []
    if retrieved:
        target = read_retrieved(Path(retrieved), examples[TARGET])
        rate = [featurize(embedder, [(ex.claim, ex.pairs) for ex in target])]
    runs: dict[str, list[dict[str, Any]]] = {"gold": [], "retrieved": []}
    for shuffle in shuffles:
        probs = cross_validate(x, y, source, stratified_folds(gold, folds, shuffle), l2=L2,
                               extra_weight=EXTRA_WEIGHT, rate=rate)
        runs["gold"].append(metrics(probs[0], gold))
        if rate:
            runs["retrieved"].append(metrics(probs[1], gold))
    out = {"gold": summary(runs["gold"])}
    if runs["retrieved"]:
        out["retrieved"] = summary(runs["retrieved"])
    return out


def _device_name(jax: Any) -> str:
    dev = jax.devices()[0]
    return f"{getattr(dev, 'device_kind', dev.platform)} (JAX, {dev.platform})"
