"""``factsieve train-checkworthiness`` and ``evaluate-checkworthiness``: the check-worthiness head
(``plugin.claims.checkworthy``) fitted and scored on a sentence dataset (``sentences.jsonl``:
``{"id", "text", "lang", "label", "split"}``; CheckThat! 2024 task 1 English in ``../shared/data``).

**Features**: each sentence's embedding as the posts index stores a post's (the base model's query
side over the normalised text), cached per model and dataset under ``--work-dir``. **Model**:
L2-regularised logistic regression (Newton's method in numpy, class-balanced weights). **Choice,
out of fold on the training split only**: the L2 strength and the decision threshold that give the
best positive-class F1 over 5 folds of ``train``; then one fit on all of ``train``. ``dev`` and
``dev-test`` are scored once, with the chosen threshold. The metric is the task's: F1 of the
positive (check-worthy) class.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

#: the L2 strengths the fit chooses among (out of fold)
L2_GRID = (0.1, 1.0, 10.0, 100.0)
#: the thresholds it chooses among
THRESHOLDS = tuple(round(0.05 * i, 2) for i in range(2, 19))


def read_sentences(path: Path) -> list[dict[str, Any]]:
    file = path / "sentences.jsonl" if path.is_dir() else path
    if not file.is_file():
        raise ValueError(f"{file}: not found (a folder with sentences.jsonl: id, text, lang, label, split)")
    rows = []
    with open(file, encoding="utf-8") as fh:
        for i, line in enumerate(fh, 1):
            if line.strip():
                row = json.loads(line)
                if not isinstance(row.get("text"), str) or not isinstance(row.get("label"), bool):
                    raise ValueError(f"{file}:{i}: a sentence needs text (a string) and label (true/false)")
                rows.append(row)
    return rows


def prf(y: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    """Positive-class precision, recall, F1, and accuracy (pure)."""
    tp = float(np.sum(pred & y))
    p = tp / max(float(np.sum(pred)), 1.0)
    r = tp / max(float(np.sum(y)), 1.0)
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"f1": round(f1, 4), "precision": round(p, 4), "recall": round(r, 4),
            "accuracy": round(float(np.mean(pred == y)), 4), "n": int(len(y))}


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float, iters: int = 25) -> tuple[np.ndarray, float]:
    """Class-balanced L2 logistic regression by Newton's method: ``(weights, bias)``."""
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    pos = max(float(y.sum()), 1.0)
    sw = np.where(y, n / (2 * pos), n / (2 * max(n - pos, 1.0)))
    w = np.zeros(d + 1)
    reg = np.full(d + 1, l2)
    reg[-1] = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ w, -50, 50)))
        grad = xb.T @ (sw * (p - y)) + reg * w
        h = (xb * (sw * p * (1 - p))[:, None]).T @ xb + np.diag(reg + 1e-6)
        step = np.linalg.solve(h, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-6:
            break
    return w[:-1], float(w[-1])


def scores_of(x: np.ndarray, w: np.ndarray, b: float) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x @ w + b, -50, 50)))


def folds(n: int, k: int = 5, seed: int = 0) -> list[np.ndarray]:
    order = np.random.default_rng(seed).permutation(n)
    return [order[i::k] for i in range(k)]


def choose(x: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """The L2 strength and threshold with the best out-of-fold F1 on ``(x, y)``, and that F1."""
    best: dict[str, Any] | None = None
    table = []
    for l2 in L2_GRID:
        oof = np.zeros(len(y))
        for held in folds(len(y)):
            keep = np.ones(len(y), bool)
            keep[held] = False
            w, b = fit_logistic(x[keep], y[keep], l2)
            oof[held] = scores_of(x[held], w, b)
        for t in THRESHOLDS:
            row = {"l2": l2, "threshold": t, **prf(y, oof >= t)}
            table.append(row)
            if best is None or row["f1"] > best["f1"]:
                best = row
    assert best is not None
    return {"chosen": best, "table": table}


def features(rows: Sequence[dict[str, Any]], embed: Callable[[list[str]], np.ndarray], cache: Path,
             model: str, batch: int = 64) -> np.ndarray:
    """The embeddings of ``rows``' texts, computed once per model and texts (``cache``)."""
    key = hashlib.sha256((model + "\x1f" + "\x1e".join(r["text"] for r in rows)).encode()).hexdigest()[:16]
    path = cache / f"{key}.npy"
    if path.is_file():
        return np.load(path)
    out = np.vstack([embed([r["text"] for r in rows[i:i + batch]]) for i in range(0, len(rows), batch)])
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, out.astype(np.float32))
    return out


def embedder_fn(embedder: Any) -> Callable[[list[str]], np.ndarray]:
    """What the posts index stores for a post (``PostMemory.vector``), for a batch of texts."""
    from plugin.search.normalize import normalize_post

    return lambda texts: np.asarray(embedder.encode_queries([normalize_post(t) or t.strip() for t in texts]))


def train(dataset: Path, embedder: Any, *, work_dir: Path, name: str) -> dict[str, Any]:
    """Choose and fit the head on ``train``; score ``dev`` and ``dev-test`` once; the head's file."""
    from plugin.claims.checkworthy import CheckWorthiness

    rows = read_sentences(dataset)
    x = features(rows, embedder_fn(embedder), work_dir, embedder.name)
    y = np.array([r["label"] for r in rows])
    split = np.array([r.get("split") for r in rows])
    tr = split == "train"
    if not tr.any():
        raise ValueError("no sentence has split \"train\"")
    picked = choose(x[tr], y[tr])
    chosen = picked["chosen"]
    w, b = fit_logistic(x[tr], y[tr], chosen["l2"])
    measured = {s: prf(y[split == s], scores_of(x[split == s], w, b) >= chosen["threshold"])
                for s in sorted(set(split) - {"train"})}
    head = CheckWorthiness(tuple(float(v) for v in w), b, chosen["threshold"], embedder.name, {
        "name": name, "kind": "logistic head over the posts index's embedding",
        "trained_on": {"dataset": dataset.name, "split": "train", "sentences": int(tr.sum()),
                       "positive": int(y[tr].sum())},
        "chosen_out_of_fold": {"l2": chosen["l2"], "threshold": chosen["threshold"], "folds": 5,
                               "f1": chosen["f1"], "precision": chosen["precision"], "recall": chosen["recall"]},
        "measured": measured,
        "rebuild": f"factsieve train-checkworthiness --dataset {dataset} --name {name}"})
    return {"head": head.to_file(), "out_of_fold": chosen, "measured": measured}


def evaluate(dataset: Path, embedder: Any, head: Any, *, work_dir: Path, splits: Sequence[str] | None) -> dict[str, Any]:
    """The head's positive-class F1 (precision, recall, accuracy, n) on ``splits`` of ``dataset``."""
    rows = [r for r in read_sentences(dataset) if splits is None or r.get("split") in splits]
    if not rows:
        raise ValueError(f"no sentences in split(s) {list(splits or [])}")
    x = features(rows, embedder_fn(embedder), work_dir, embedder.name)
    y = np.array([r["label"] for r in rows])
    s = x @ np.asarray(head.weights) + head.bias
    pred = 1.0 / (1.0 + np.exp(-np.clip(s, -50, 50))) >= head.threshold
    langs = sorted({r.get("lang") or "?" for r in rows})
    out = {**prf(y, pred), "threshold": head.threshold, "head": head.manifest.get("name"),
           "split": ",".join(splits) if splits else "all"}
    if len(langs) > 1:
        out["per_lang"] = {lang: prf(y[[r.get("lang") == lang for r in rows]],
                                     pred[[r.get("lang") == lang for r in rows]]) for lang in langs}
    return out
