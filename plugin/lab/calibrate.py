"""``factsieve calibrate``: fit a configuration's confidence model and measure it.

Labelled matches come from a dataset's training queries (``split == "train"``; CLEF-2020 T2 has
546), each run twice in the given mode: as it is, and with the fact-checks that answer it left
out of the index (``ExcludingMatcher``), so that half the posts have no right answer to find.
Every shown match (top ``k``) is one example, labelled 1 when it answers the post: one of its
fact-checks, or a near-duplicate of one (the same claim fact-checked again, word-set Jaccard ≥
0.8, as ``plugin.lab.excluding`` counts them; CLEF-2020 has many, and labelling them 0
taught the model that no match is ever sure). The fit
(``plugin.search.calibration``) is written as JSON beside the packaged configurations; its
expected calibration error is then measured, with the same protocol, on the held-out queries
and on any further dataset (``--check``), per language.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from plugin.learn.train.datasets import Dataset, ensure_dataset_index
from plugin.lab.excluding import ExcludingMatcher, claim_words, duplicates_of
from plugin.models import Mode
from plugin.search.calibration import Calibrator, expected_calibration_error, fit_calibrator
from plugin.search.matcher import MatchRequest
from plugin.search.retrieval import RetrievalConfig


def labelled_matches(store: Any, embedder: Any, settings: Any, dataset: Dataset,
                     config: RetrievalConfig, *, mode: Mode, k: int = 10,
                     splits: Iterable[str] | None = None, exclude_splits: Iterable[str] = (),
                     qrels: dict[str, set[str]] | None = None, reranker: Any = None) -> dict[str, Any]:
    """``{"x", "y", "lang", "queries"}``: each shown match's features, label and post language,
    from every query of ``qrels`` (default: all the dataset's) in ``splits`` (all when ``None``)
    and not in ``exclude_splits``, run with and without its fact-checks in the index
    (reranked by ``reranker`` when the configuration reranks)."""
    alias, _ = ensure_dataset_index(store, embedder, dataset, settings)
    # with the configuration's reranker, if any, the matches are labelled in the order it shows them
    matcher = ExcludingMatcher(store, embedder, settings, alias=alias, config=config, reranker=reranker)
    qrels = dataset.qrels["all"] if qrels is None else qrels
    wanted = set(splits) if splits is not None else None
    skip = set(exclude_splits)
    with open(Path(dataset.path) / "factchecks.jsonl", encoding="utf-8") as fh:
        words = claim_words({str(r["id"]): r.get("claim") or "" for r in map(json.loads, filter(str.strip, fh))})
    rows: list[np.ndarray] = []
    labels: list[float] = []
    langs: list[str] = []
    posts: list[str] = []
    n = 0
    for q in dataset.queries:
        qid = str(q["id"])
        if qid not in qrels or q.get("split") in skip or (wanted is not None and q.get("split") not in wanted):
            continue
        n += 1
        answers = duplicates_of(qrels[qid], words)
        req = MatchRequest(text=q["text"], lang=q.get("lang"), mode=mode, k=k)
        for result in (matcher.match(req), matcher.match_without(req, answers)):
            if result.features is None or not result.matches:
                continue
            rows.append(result.features)
            labels.extend(float(m["id"] in answers) for m in result.matches)
            langs.extend([result.lang or "?"] * len(result.matches))
            posts.extend([qid] * len(result.matches))
    x = np.vstack(rows) if rows else np.zeros((0, 0))
    return {"x": x, "y": np.asarray(labels), "lang": langs, "queries": n, "post": posts}


def _scores(p: np.ndarray, y: np.ndarray, *, spread: bool = False) -> dict[str, Any]:
    out = {"matches": int(len(y)), "positives": int(y.sum()),
           "ECE": round(expected_calibration_error(p, y), 4),
           "mean_confidence": round(float(p.mean()), 4), "observed_rate": round(float(y.mean()), 4)}
    if spread and len(y):
        out.update(ece_spread(p, y))
    return out


def ece_spread(p: np.ndarray, y: np.ndarray, *, draws: int = 1000, seed: int = 0) -> dict[str, Any]:
    """How far a sample this size pins the ECE down (pure): ``ECE_95``, the 2.5th and 97.5th
    percentiles of the ECE over bootstrap resamples of the matches; ``ECE_floor``, the mean ECE
    of a perfectly calibrated model with these confidences (labels drawn as Bernoulli(p)), which
    a measured ECE near it cannot be told from."""
    rng = np.random.default_rng(seed)
    p, y = np.asarray(p, dtype=np.float64), np.asarray(y, dtype=np.float64)
    boot = [expected_calibration_error(p[i], y[i]) for i in (rng.integers(0, len(p), len(p)) for _ in range(draws))]
    floor = [expected_calibration_error(p, (rng.random(len(p)) < p).astype(np.float64)) for _ in range(draws)]
    return {"ECE_95": [round(float(np.percentile(boot, 2.5)), 4), round(float(np.percentile(boot, 97.5)), 4)],
            "ECE_floor": round(float(np.mean(floor)), 4)}


def thresholds(p: np.ndarray, y: np.ndarray, findable: int,
               at: Sequence[float] = (0.5, 0.7, 0.8, 0.9, 0.95)) -> dict[str, Any]:
    """Precision and recall of "the top match addresses the post" at confidence thresholds:
    ``p``/``y`` are the top matches' confidences and labels; recall is over the ``findable``
    posts (those run with their fact-checks in the index)."""
    out = {}
    for t in at:
        chosen = p >= t
        out[str(t)] = {"precision": round(float(y[chosen].mean()), 4) if chosen.any() else None,
                       "recall": round(float(y[chosen].sum() / max(findable, 1)), 4),
                       "answered": int(chosen.sum())}
    return out


def calibration_report(cal: Calibrator, data: dict[str, Any]) -> dict[str, Any]:
    """ECE, mean confidence and observed rate of ``cal`` on labelled matches, overall and per
    post language; for every shown match and for the top match alone (``top1``: what a webhook
    threshold or the verification lookup reads; over all ten, the many sure misses make any
    model look calibrated)."""
    if not len(data["y"]):
        return {"queries": data["queries"], "matches": 0}
    return probability_report(predicted(cal, data), data)


def predicted(cal: Calibrator, data: dict[str, Any]) -> np.ndarray:
    """``cal``'s probability for each labelled match, by its post's language."""
    langs = np.asarray(data["lang"])
    probs = np.empty(len(data["y"]))
    for lang in set(data["lang"]):
        probs[langs == lang] = cal.predict(data["x"][langs == lang], lang)
    return probs


def out_of_fold_maps(base: Calibrator, data: dict[str, Any], folds: int = 5) -> dict[str, Any]:
    """``calibration_report`` of the language maps ``with_language_maps`` fits on these labelled
    matches, each post's matches predicted by the maps fitted without its fold (``folds`` by the
    sha1 of the post id; pure): the calibration a language's map will have on posts it was not
    fitted on, on every training post rather than the few a dev split holds."""
    from plugin.search.calibration import with_language_maps

    if not len(data["y"]):
        return {"queries": data["queries"], "matches": 0}
    fold = np.asarray([int(hashlib.sha1(p.encode("utf-8")).hexdigest(), 16) % folds for p in data["post"]])
    langs = np.asarray(data["lang"])
    probs = np.empty(len(data["y"]))
    mapped: dict[str, int] = {}
    for k in range(folds):
        rest, held = fold != k, fold == k
        cal, got = with_language_maps(base, data["x"][rest], data["y"][rest], list(langs[rest]), {})
        for lang in got:
            mapped[lang] = mapped.get(lang, 0) + 1
        probs[held] = predicted(cal, {"x": data["x"][held], "y": data["y"][held], "lang": list(langs[held])})
    return {**probability_report(probs, data), "folds": folds, "mapped_in_folds": mapped,
            "protocol": f"{folds} folds by sha1 of the post id; each fold's matches by the maps fitted on the others"}


def probability_report(probs: np.ndarray, data: dict[str, Any]) -> dict[str, Any]:
    """``calibration_report`` from the probabilities some model gave ``data``'s matches."""
    langs = np.asarray(data["lang"])
    y = data["y"]
    top = data["x"][:, 0] == 1.0  # FEATURES[0] is 1 / rank
    out: dict[str, Any] = {"queries": data["queries"], **_scores(probs, y),
                           "brier": round(float(np.mean((probs - y) ** 2)), 4),
                           "top1": {**_scores(probs[top], y[top], spread=True),
                                    "at": thresholds(probs[top], y[top], data["queries"])},
                           "per_lang": {}}
    for lang in sorted(set(data["lang"])):
        m = langs == lang
        out["per_lang"][lang] = {**_scores(probs[m], y[m]), "top1": _scores(probs[m & top], y[m & top], spread=True)}
    return out


def out_of_fold(store: Any, embedder: Any, settings: Any, dataset: Dataset, config: RetrievalConfig,
                folds: Sequence[str], *, mode: Mode) -> dict[str, Any]:
    """Labelled matches of the training queries, each run with the fold adapter that did not
    train on it (``train-query-encoder --fold``): a configuration whose query tower saw the
    training queries ranks them better than it will rank anyone's posts, and a confidence model
    fitted on that would be sure too often."""
    from plugin.embedding.adapter import find_adapter
    from plugin.build.adapted import build_query_tower

    train_ids = {str(q["id"]) for q in dataset.queries if q.get("split") == "train"}
    parts: list[dict[str, Any]] = []
    covered: set[str] = set()
    for name in folds:
        build_query_tower(settings, name)  # reused when built; a fold must never fall back to the base
        seen = {str(q) for q in find_adapter(name, settings.query_adapter_dir).manifest.get("training_query_ids", [])}
        held = {q: rel for q, rel in dataset.qrels["all"].items() if q in train_ids - seen - covered}
        covered |= set(held)
        parts.append(labelled_matches(store, embedder, settings, dataset,
                                      config.model_copy(update={"query_encoder": name}), mode=mode,
                                      splits=["train"], qrels=held))
    missing = {q for q in train_ids if q in dataset.qrels["all"]} - covered
    if missing:
        raise ValueError(f"{len(missing)} training queries were seen by every fold adapter "
                         f"({', '.join(folds)}): train them with --fold I/K for every I")
    rows = [p["x"] for p in parts if len(p["y"])]
    return {"x": np.vstack(rows) if rows else np.zeros((0, 0)),
            "y": np.concatenate([p["y"] for p in parts]), "lang": [lang for p in parts for lang in p["lang"]],
            "queries": sum(p["queries"] for p in parts)}


def calibrate(store: Any, embedder: Any, settings: Any, dataset: Dataset, config: RetrievalConfig, *,
              out: Path, mode: Mode = Mode.AUTO, checks: Sequence[Dataset] = (),
              cross_fit: Sequence[str] = ()) -> dict[str, Any]:
    """Fit on ``dataset``'s training queries, write ``out``, measure on its other queries and
    on ``checks``. A dataset without a ``train`` split cannot be fitted on. ``cross_fit``: the
    fold adapters to run the training queries with (``out_of_fold``), for a configuration whose
    query encoder was trained on them. ``out`` inside the installed package is refused."""
    from plugin.artefacts import outside_package

    outside_package(out, "--out")
    if not any(q.get("split") == "train" and str(q["id"]) in dataset.qrels["all"] for q in dataset.queries):
        raise ValueError(f"{dataset.path} has no queries with split 'train' to fit on")
    if config.query_encoder and not cross_fit:
        raise ValueError(f"{config.name} embeds posts with the query encoder "
                         f"{config.query_encoder!r}, which was trained on these queries: fit on "
                         "out-of-fold adapters (--cross-fit NAME,NAME,...)")
    if cross_fit:
        train = out_of_fold(store, embedder, settings, dataset, config, cross_fit, mode=mode)
    else:
        train = labelled_matches(store, embedder, settings, dataset, config, mode=mode, splits=["train"])
    cal = fit_calibrator(config.name, train["x"], train["y"], train["lang"], trained_on={
        "dataset": Path(str(dataset.path)).name, "split": "train", "mode": mode.value,
        "queries": train["queries"], "matches": int(len(train["y"])),
        **({"cross_fit": list(cross_fit)} if cross_fit else {}),
        "protocol": "each post with and without its fact-checks in the index; top 10 matches"})
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(cal.to_dict(), indent=1) + "\n", encoding="utf-8")
    held = labelled_matches(store, embedder, settings, dataset, config, mode=mode, exclude_splits=["train"])
    report = {"config": config.name, "mode": mode.value, "written": str(out),
              "train": calibration_report(cal, train),
              "held_out": {Path(str(dataset.path)).name: calibration_report(cal, held)}}
    for other in checks:
        data = labelled_matches(store, embedder, settings, other, config, mode=mode)
        report["held_out"][Path(str(other.path)).name] = calibration_report(cal, data)
    return report


def add_languages(store: Any, embedder: Any, settings: Any, base: Calibrator, datasets: Sequence[Dataset],
                  config: RetrievalConfig, *, out: Path, mode: Mode = Mode.AUTO, reranker: Any = None,
                  trained: dict[str, set[str]] | None = None) -> dict[str, Any]:
    """``calibrate --add-languages``: ``base`` with an isotonic map per language of ``datasets``'
    training queries (``calibration.with_language_maps``), written to ``out`` and measured on
    each dataset's other queries (never fitted on), before and after, per language. For a
    reranking configuration the matches are labelled in ``reranker``'s order, and only training
    queries it did not train on (``trained``: by dataset folder name) are fitted on: a reranker
    is surer of posts it has seen than it will be of anyone's."""
    from plugin.artefacts import outside_package
    from plugin.search.calibration import with_language_maps

    outside_package(out, "--out")
    cal, report = base, {"config": config.name, "mode": mode.value, "written": str(out), "datasets": {}}
    held = {}
    for dataset in datasets:
        seen = (trained or {}).get(Path(str(dataset.path)).name, set())
        qrels = {q: rel for q, rel in dataset.qrels["all"].items() if q not in seen}
        train = labelled_matches(store, embedder, settings, dataset, config, mode=mode, splits=["train"],
                                 qrels=qrels, reranker=reranker)
        if not len(train["y"]):
            raise ValueError(f"{dataset.path} has no queries with split 'train' to fit on")
        name = Path(str(dataset.path)).name
        before = cal
        cal, mapped = with_language_maps(cal, train["x"], train["y"], train["lang"], {
            "dataset": name, "split": "train", "mode": mode.value, "queries": train["queries"],
            "protocol": "each post with and without its fact-checks in the index; top 10 matches"})
        held[name] = labelled_matches(store, embedder, settings, dataset, config, mode=mode,
                                      exclude_splits=["train"], reranker=reranker)
        report["datasets"][name] = {"mapped": mapped, "left_out_trained": len(seen & set(dataset.qrels["all"])),
                                    "train": calibration_report(cal, train),
                                    "out_of_fold": out_of_fold_maps(before, train)}
    for name, data in held.items():
        report["datasets"][name]["held_out"] = {"before": calibration_report(base, data),
                                                "after": calibration_report(cal, data)}
    cal = replace(cal, config=config.name)  # the configuration it now serves (a reranking one's own)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(cal.to_dict(), indent=1) + "\n", encoding="utf-8")
    return report
