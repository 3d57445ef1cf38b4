"""``factsieve train-verdict``: fit the verdict head (``plugin.verify.head``) on the tuning parts of
AVeriTeC, Climate-FEVER and LIAR-PLUS (mapped onto the four AVeriTeC labels) and measure what each
dataset adds, by repeated stratified k-fold over the AVeriTeC claims. A multinomial logistic
regression fitted by L-BFGS (scipy); inference needs numpy only. The datasets, label mappings,
weighting and validation: ``docs/design/verdict-model.md``.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from plugin.errors import BadInput
from plugin.verify.averitec import gold_qa_pairs, read_claims
from plugin.verify.head import (FEATURE_VERSION, MAX_PAIRS, SoftmaxModel, artifact_paths, featurize,
                                softmax)
from plugin.verify.scoring import LABELS, label_metrics, majority_baseline

log = logging.getLogger(__name__)

SUPPORTED, REFUTED, NEE, CONFLICTING = LABELS
#: The dataset every number is reported on; the others only ever join the training folds.
TARGET = "averitec"
CLIMATE_FEVER_LABELS = {"SUPPORTS": SUPPORTED, "REFUTES": REFUTED, "NOT_ENOUGH_INFO": NEE,
                        "DISPUTED": CONFLICTING}
LIAR_PLUS_LABELS = {"true": SUPPORTED, "mostly-true": SUPPORTED, "half-true": CONFLICTING,
                    "barely-true": REFUTED, "false": REFUTED, "pants-fire": REFUTED}
#: L2 strength (on the weighted mean loss over standardised features). Tried 0.003–3 on the
#: averitec CV: 0.3–1 best; 1 the steadier across shuffles.
L2 = 1.0
#: Total weight of each extra dataset against averitec's 1 (tried 1, 0.3, 0.1: 0.1 best).
EXTRA_WEIGHT = 0.1
#: Head weights of the blend with an LLM's ratings reported on the reference verdicts.
BLEND_WEIGHTS = (0.0, 0.6, 0.7, 0.8, 0.9, 1.0)


@dataclass(frozen=True)
class Example:
    id: str
    claim: str
    pairs: tuple[dict[str, Any], ...]
    label: str
    source: str
    #: the claim's ISO date where the dataset gives one (the fine-tuned model reads it)
    date: str | None = None


def load_averitec(path: Path) -> list[Example]:
    return [Example(str(c["id"]), c["claim"], tuple(gold_qa_pairs(c)), c["label"], TARGET, c.get("date"))
            for c in read_claims(path)]


def load_climate_fever(path: Path) -> list[Example]:
    out = []
    for c in read_claims(path):
        pairs = tuple({"question": ev.get("article") or c["claim"], "answer": ev["evidence"]}
                      for ev in c.get("evidences") or [] if ev.get("evidence"))
        out.append(Example(str(c["id"]), c["claim"], pairs, _mapped(CLIMATE_FEVER_LABELS, c, path),
                           "climate_fever"))
    return out


def load_liar_plus(path: Path) -> list[Example]:
    return [Example(str(c["id"]), c["claim"],
                    ({"question": c["claim"], "answer": " ".join(c["justification"].split())},),
                    _mapped(LIAR_PLUS_LABELS, c, path), "liar_plus")
            for c in read_claims(path) if (c.get("justification") or "").strip()]


def _mapped(table: Mapping[str, str], claim: Mapping[str, Any], path: Path) -> str:
    try:
        return table[claim["label"]]
    except KeyError:
        raise BadInput(f"{path}: claim {claim.get('id')!r} has label {claim.get('label')!r}; "
                       f"expected one of {sorted(table)}") from None


LOADERS: dict[str, Callable[[Path], list[Example]]] = {
    TARGET: load_averitec, "climate_fever": load_climate_fever, "liar_plus": load_liar_plus}
LABEL_MAPS = {"climate_fever": CLIMATE_FEVER_LABELS, "liar_plus": LIAR_PLUS_LABELS}


# -- the classifier -------------------------------------------------------------------------------
def class_weights(y: np.ndarray) -> np.ndarray:
    """Per-example weights ``n / (k · n_class)`` (scikit-learn's "balanced") over the ``k``
    classes present, so each class carries the same total weight."""
    counts = np.bincount(y, minlength=len(LABELS)).astype(float)
    present = counts > 0
    per_class = np.zeros(len(LABELS))
    per_class[present] = len(y) / (present.sum() * counts[present])
    return per_class[y]


def sample_weights(y: np.ndarray, source: np.ndarray, extra_weight: float) -> np.ndarray:
    """Class-balanced within each dataset; the target's examples sum to 1, each other dataset's
    to ``extra_weight``."""
    w = np.zeros(len(y))
    for name in np.unique(source):
        at = source == name
        w[at] = class_weights(y[at]) / at.sum() * (1.0 if name == TARGET else extra_weight)
    return w


def fit_softmax(x: np.ndarray, y: np.ndarray, *, l2: float, sample_weight: np.ndarray | None = None,
                max_iter: int = 500) -> SoftmaxModel:
    """Multinomial logistic regression on standardised ``x``: minimises the weighted mean
    cross-entropy plus ``l2 / 2 · ‖W‖²`` (bias unpenalised) with L-BFGS from zero."""
    from scipy.optimize import minimize

    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-6] = 1.0
    z = ((x - mean) / scale).astype(np.float64)
    n, d = z.shape
    k = len(LABELS)
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    w = w / w.sum()
    onehot = np.eye(k)[y]

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        weights, bias = theta[:d * k].reshape(d, k), theta[d * k:]
        p = softmax(z @ weights + bias)
        ce = -(w * np.log(np.clip((p * onehot).sum(axis=1), 1e-12, None))).sum()
        g = (p - onehot) * w[:, None]
        grad = np.concatenate([(z.T @ g + l2 * weights).ravel(), g.sum(axis=0)])
        return ce + 0.5 * l2 * float((weights ** 2).sum()), grad

    res = minimize(loss, np.zeros(d * k + k), jac=True, method="L-BFGS-B",
                   options={"maxiter": max_iter})
    return SoftmaxModel(mean=mean.astype(np.float32), scale=scale.astype(np.float32),
                        weights=res.x[:d * k].reshape(d, k).astype(np.float32),
                        bias=res.x[d * k:].astype(np.float32))


def stratified_folds(labels: Sequence[str], folds: int, seed: int) -> np.ndarray:
    """A fold number per example: each label's examples shuffled (``seed``) and dealt
    round-robin, continuing where the previous label stopped."""
    rng = np.random.default_rng(seed)
    fold = np.zeros(len(labels), dtype=int)
    at = 0
    for label in LABELS:
        idx = np.flatnonzero(np.asarray(labels) == label)
        rng.shuffle(idx)
        fold[idx] = (np.arange(len(idx)) + at) % folds
        at += len(idx)
    return fold


def cross_validate(x: np.ndarray, y: np.ndarray, source: np.ndarray, fold: np.ndarray, *,
                   l2: float, extra_weight: float,
                   rate: Sequence[np.ndarray] = ()) -> list[np.ndarray]:
    """Out-of-fold probabilities of the target's examples (``fold`` numbers them, in order);
    the other rows of ``x`` join every training fold. Each matrix in ``rate`` (more features of
    the target claims, row-aligned) is rated by the same fold models; their probabilities follow
    in the list returned."""
    t_idx = np.flatnonzero(source == TARGET)
    rest = np.flatnonzero(source != TARGET)
    out = [np.zeros((len(t_idx), len(LABELS))) for _ in range(1 + len(rate))]
    for f in range(int(fold.max()) + 1):
        test = fold == f
        train = np.concatenate([t_idx[~test], rest])
        model = fit_softmax(x[train], y[train], l2=l2,
                            sample_weight=sample_weights(y[train], source[train], extra_weight))
        for probs, mx in zip(out, [x[t_idx], *rate]):
            probs[test] = model.probabilities(mx[test])
    return out


def metrics(probs: np.ndarray, gold: Sequence[str]) -> dict[str, Any]:
    m = label_metrics([LABELS[i] for i in probs.argmax(axis=1)], list(gold))
    return {"accuracy": round(m["accuracy"], 4), "macro_f1": round(m["macro_f1"], 4),
            "per_class_f1": {k: round(v, 4) for k, v in m["per_class_f1"].items()},
            "confusion": m["confusion"]}


def _summary(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Mean (and standard deviation over shuffles) of repeated CV runs; the first run's confusion."""
    def mean_sd(key: str) -> dict[str, float]:
        v = np.asarray([r[key] for r in runs])
        return {"mean": round(float(v.mean()), 4), "sd": round(float(v.std()), 4)}

    return {"accuracy": mean_sd("accuracy"), "macro_f1": mean_sd("macro_f1"),
            "per_class_f1": {k: round(float(np.mean([r["per_class_f1"][k] for r in runs])), 4)
                             for k in LABELS},
            "confusion_first_shuffle": runs[0]["confusion"]}


# -- the command ------------------------------------------------------------------------------------
def train_verdict(embedder: Any, datasets: Mapping[str, Path], *, out: Path, seed: int = 0,
                  folds: int = 5, repeats: int = 3, reference: Path | None = None,
                  l2: float = L2, extra_weight: float = EXTRA_WEIGHT,
                  progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Load ``datasets`` (``name → folder``; ``averitec`` required), cross-validate every
    condition, fit the final head on all of them and write it to ``out`` (a folder, or the
    ``.npz`` path). ``reference``: a folder of HerO-shaped ``*_predictions.jsonl`` (``id``,
    ``pred_label``, ``evidence``) on the same averitec claims. Returns the report. ``out``
    inside the installed package is refused before anything is trained."""
    from plugin.artefacts import outside_package

    outside_package(out, "--out")
    say = progress or log.info
    unknown = sorted(set(datasets) - set(LOADERS))
    if unknown:
        raise BadInput(f"unknown dataset(s) {unknown}; known: {', '.join(LOADERS)}")
    if TARGET not in datasets:
        raise BadInput("train-verdict needs the averitec tuning claims (--averitec DIR): every "
                       "number is measured on them")
    if folds < 2 or repeats < 1:
        raise BadInput(f"need --folds ≥ 2 and --repeats ≥ 1, got {folds} and {repeats}")
    t0 = time.perf_counter()
    examples = {name: LOADERS[name](Path(path)) for name, path in datasets.items()}
    names = [TARGET] + sorted(n for n in examples if n != TARGET)
    rows = [ex for n in names for ex in examples[n]]
    source = np.asarray([ex.source for ex in rows])
    y = np.asarray([LABELS.index(ex.label) for ex in rows])
    parts = []
    for n in names:
        t = time.perf_counter()
        parts.append(featurize(embedder, [(ex.claim, ex.pairs) for ex in examples[n]]))
        say(f"features: {n}, {len(examples[n])} claims, {time.perf_counter() - t:.0f} s")
    x = np.concatenate(parts)
    gold = [ex.label for ex in examples[TARGET]]
    ref = _reference(Path(reference), examples[TARGET], embedder) if reference else {}
    if ref:
        say(f"features: reference evidence of {', '.join(ref)}")
    t_feat = time.perf_counter() - t0

    conditions = {TARGET: [TARGET], **{f"{TARGET}+{n}": [TARGET, n] for n in names[1:]}}
    final = "+".join(names)
    conditions[final] = names
    cv: dict[str, Any] = {}
    ref_probs: list[np.ndarray] = []
    for cond, used in conditions.items():
        keep = np.isin(source, used)
        runs = []
        for r in range(repeats):
            fold = stratified_folds(gold, folds, seed + r)
            probs = cross_validate(x[keep], y[keep], source[keep], fold, l2=l2, extra_weight=extra_weight,
                                   rate=[v["x"] for v in ref.values()] if cond == final and r == 0 else ())
            if cond == final and r == 0:
                ref_probs = probs[1:]
            runs.append(metrics(probs[0], gold))
        cv[cond] = {"train_claims": int(len(gold) * (folds - 1) / folds + keep.sum() - len(gold)),
                    **_summary(runs)}
        say(f"cv: {cond}: macro-F1 {cv[cond]['macro_f1']['mean']:.3f}, "
            f"accuracy {cv[cond]['accuracy']['mean']:.3f}")
    t_cv = time.perf_counter() - t0 - t_feat

    model = fit_softmax(x, y, l2=l2, sample_weight=sample_weights(y, source, extra_weight))
    t_total = time.perf_counter() - t0
    report: dict[str, Any] = {
        "encoder": {"name": embedder.name, "dim": embedder.dim},
        "feature_version": FEATURE_VERSION, "labels": list(LABELS),
        "model": {"kind": "multinomial logistic regression (L-BFGS)", "l2": l2,
                  "weights": f"class-balanced per dataset; {TARGET} 1, each other {extra_weight}",
                  "features": int(x.shape[1])},
        "trained_on": final,
        "data": {n: {"path": str(datasets[n]), "claims": len(examples[n]),
                     "pairs": sum(min(len(ex.pairs), MAX_PAIRS) for ex in examples[n]),
                     "labels": dict(Counter(ex.label for ex in examples[n])),
                     **({"label_map": LABEL_MAPS[n]} if n in LABEL_MAPS else {})} for n in names},
        "cv": {"folds": folds, "shuffles": [seed + r for r in range(repeats)],
               "evidence": "gold QA pairs", "claims": len(gold),
               "majority_baseline": {k: round(v, 4) if isinstance(v, float) else v
                                     for k, v in majority_baseline(gold).items()},
               "conditions": cv},
    }
    if ref:
        report["reference_evidence"] = _blend_report(ref, ref_probs, gold, final)
    report["timing_s"] = {"features": round(t_feat, 1), "cross_validation": round(t_cv, 1),
                          "total": round(t_total, 1)}
    report["trained"] = {"date": date.today().isoformat(), "device": "cpu",
                         "machine": f"{platform.machine()}, {_cpus()} CPUs available"}
    report["artifact"] = write_artifact(model, report, out)
    return report


def write_artifact(model: SoftmaxModel, report: Mapping[str, Any], out: Path) -> dict[str, Any]:
    """The weights (``.npz``) and the manifest (``.json``: the report without confusions)."""
    weights, manifest = artifact_paths(Path(out))
    weights.parent.mkdir(parents=True, exist_ok=True)
    model.save(weights)
    keep = json.loads(json.dumps({k: v for k, v in report.items() if k != "artifact"}))
    for cond in keep["cv"]["conditions"].values():
        cond.pop("confusion_first_shuffle", None)
    manifest.write_text(json.dumps(keep, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return {"weights": str(weights), "manifest": str(manifest), "bytes": weights.stat().st_size}


def _reference(folder: Path, claims: Sequence[Example], embedder: Any) -> dict[str, dict[str, Any]]:
    """Per reference system: its verdicts on the averitec claims and the features of its
    retrieved evidence (``{question, answer}`` items), row-aligned with ``claims``. Systems that
    share their evidence (HerO 8B and 70B do) are featurised once."""
    out: dict[str, dict[str, Any]] = {}
    seen: dict[str, np.ndarray] = {}
    for file in sorted(folder.glob("*_predictions.jsonl")):
        preds = {str(r["id"]): r for r in read_claims(file)}
        missing = [c.id for c in claims if c.id not in preds]
        if missing:
            log.warning("%s lacks %d of the claims (e.g. %s): skipped", file.name, len(missing), missing[0])
            continue
        rows = [preds[c.id] for c in claims]
        items = [(c.claim, [{"question": e.get("question"), "answer": e.get("answer")}
                            for e in r.get("evidence") or []]) for c, r in zip(claims, rows)]
        key = hashlib.sha1(json.dumps(items, sort_keys=True).encode()).hexdigest()
        if key not in seen:
            seen[key] = featurize(embedder, items)
        out[file.stem.removesuffix("_predictions")] = {"labels": [r["pred_label"] for r in rows],
                                                       "x": seen[key]}
    return out


def _blend_report(ref: Mapping[str, Mapping[str, Any]], head_probs: Sequence[np.ndarray],
                  gold: Sequence[str], condition: str) -> dict[str, Any]:
    """Per system: its verdict alone (one-hot ratings, ``w = 0``), the out-of-fold head
    (``condition``, first shuffle) on the system's retrieved evidence alone (``w = 1``), and the
    blends ``(1 − w)·llm + w·head`` between. With one-hot ratings the head can overturn the
    verdict only when ``w > 0.5``, and only where it rates another label ``(1 − w)/w`` higher."""
    out: dict[str, Any] = {"head": condition, "evidence": "the system's retrieved QA pairs"}
    for (name, r), probs in zip(ref.items(), head_probs):
        llm = np.eye(len(LABELS))[[LABELS.index(v) for v in r["labels"]]]
        out[name] = {f"w={w}": {k: v for k, v in metrics((1 - w) * llm + w * probs, gold).items()
                                if k != "confusion"} for w in BLEND_WEIGHTS}
    return out


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
