"""``factsieve blend-weight``: the verdict model's weight in the LLM/model blend, chosen out of
fold on the averitec tuning split for one LLM (``plugin.verify.blend``).

Two inputs, both on the tuning claims with gold evidence:

- the LLM's ratings (``record``): the configured LLM's verdict step on every claim's gold QA
  pairs, with the blend off (``head_weight`` 0), one JSON line per claim: ``id``, ``label``
  (gold), ``llm_scores`` (its ratings; ``null`` when its output was invalid twice), ``verdict``,
  ``verdict_source`` and ``fallback_reason`` (what the fallback decided), ``seconds``;
- the verdict model's out-of-fold probabilities (``head-oof`` writes the head's): JSON
  ``{"model", "evidence": "gold", "folds", "shuffle", "labels", "claims": {id: {label: p}}}``,
  folds ``plugin.lab.verdict.stratified_folds(gold, folds, shuffle)``.

``choose`` scores each weight of :data:`GRID` as the verifier decides (:func:`blend_verdict`),
picks the one with the best macro-F1 (:func:`pick`), and measures that *procedure* by nested
cross-validation on the same folds: each fold's claims are decided by the weight picked on the
other folds. The weight written is the one picked on all claims.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from plugin.errors import BadInput, FactSieveError
from plugin.verify.blend import blended
from plugin.verify.scoring import LABELS, label_metrics

#: The weights tried: the model's weight, 0 (the LLM alone) to 1 (the model alone).
GRID = tuple(round(0.1 * i, 1) for i in range(11))


# -- the pure middle --------------------------------------------------------------------------------
def blend_verdict(llm: Mapping[str, float] | None, llm_verdict: str | None,
                  model: Mapping[str, float], w: float) -> str:
    """The verdict the verifier gives with weight ``w``: the model's top label when the LLM's
    output was invalid (``llm`` is ``None``: the fallback), the LLM's verdict at ``w`` 0, else
    the top label of ``plugin.verify.blend.blended`` (ties to the first in ``LABELS``), as
    ``Verifier._finish`` decides."""
    if llm is None:
        return max(LABELS, key=lambda k: model.get(k, 0.0))
    if w <= 0 and llm_verdict:
        return llm_verdict
    scores = blended(llm, model, w)
    return max(LABELS, key=lambda k: scores[k])


def grid_scores(rows: Sequence[Mapping[str, Any]], grid: Sequence[float] = GRID) -> dict[float, dict[str, float]]:
    """Macro-F1 and accuracy of each weight over ``rows`` (``label``, ``llm``, ``verdict``,
    ``model``)."""
    gold = [r["label"] for r in rows]
    out = {}
    for w in grid:
        m = label_metrics([blend_verdict(r["llm"], r["verdict"], r["model"], w) for r in rows], gold)
        out[w] = {"macro_f1": m["macro_f1"], "accuracy": m["accuracy"]}
    return out


def pick(scores: Mapping[float, Mapping[str, float]], prior: float) -> float:
    """The weight with the highest macro-F1; a tie goes to the higher accuracy, then to the
    weight nearest ``prior`` (the table's default: what is used when the data cannot tell
    weights apart, e.g. when every output of the LLM was invalid), then to the smaller."""
    return min(scores, key=lambda w: (-round(scores[w]["macro_f1"], 10),
                                      -round(scores[w]["accuracy"], 10), round(abs(w - prior), 10), w))


def nested_choice(rows: Sequence[Mapping[str, Any]], folds: Sequence[int], prior: float,
                  grid: Sequence[float] = GRID) -> dict[str, Any]:
    """The weight picked on all ``rows`` and the out-of-fold score of picking it: each fold's
    rows decided by the weight picked on the other folds' rows (``folds[i]`` is row ``i``'s)."""
    if len(rows) != len(folds):
        raise BadInput(f"{len(rows)} claims but {len(folds)} fold numbers")
    preds: list[str | None] = [None] * len(rows)
    per_fold = {}
    for f in sorted(set(folds)):
        train = [r for r, g in zip(rows, folds) if g != f]
        w = pick(grid_scores(train, grid), prior) if train else prior
        per_fold[int(f)] = w
        for i, g in enumerate(folds):
            if g == f:
                r = rows[i]
                preds[i] = blend_verdict(r["llm"], r["verdict"], r["model"], w)
    m = label_metrics([p for p in preds if p is not None], [r["label"] for r in rows])
    table = grid_scores(rows, grid)
    return {"weight": pick(table, prior), "grid": table, "weight_per_fold": per_fold,
            "procedure_oof": {"macro_f1": m["macro_f1"], "accuracy": m["accuracy"],
                              "per_class_f1": m["per_class_f1"], "confusion": m["confusion"]}}


def joined(llm_rows: Sequence[Mapping[str, Any]], oof: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The recorded claims that the out-of-fold file rates, in the recording's order."""
    probs = oof["claims"]
    return [{"id": r["id"], "label": r["label"], "llm": r.get("llm_scores"), "verdict": r.get("verdict_llm"),
             "fallback": r.get("verdict_source"), "model": probs[r["id"]]}
            for r in llm_rows if r["id"] in probs]


#: Why an LLM's output was invalid, from its ``fallback_reason``: the first kind whose text it holds.
INVALID_KINDS = (("every label is rated 0", "every label rated 0"),
                 ("must be the label with the highest rating", "verdict not its highest rating"),
                 ("cut at max_tokens", "cut at max_tokens"))


def invalid_kind(reason: str | None) -> str:
    """The kind of an invalid output's ``fallback_reason`` (:data:`INVALID_KINDS`), else
    ``other schema error``; a run that failed outright (``error``) is ``failed``."""
    if reason is None:
        return "failed"
    return next((kind for text, kind in INVALID_KINDS if text in reason), "other schema error")


def invalid_summary(llm_rows: Sequence[Mapping[str, Any]],
                    model: Mapping[str, Mapping[str, float]] | None = None) -> dict[str, Any]:
    """How often the LLM's output was invalid (twice, so the fallback decided), why, and what
    the fallback decided: as recorded (the verifier's verdict model, which may have been trained
    on these claims) and, given ``model``'s out-of-fold probabilities, out of fold."""
    bad = [r for r in llm_rows if r.get("llm_scores") is None]
    decided: dict[str, dict[str, int]] = {}
    kinds: dict[str, int] = {}
    for r in bad:
        by = decided.setdefault(r.get("verdict_source") or "?", {})
        by[r.get("verdict") or "?"] = by.get(r.get("verdict") or "?", 0) + 1
        kind = invalid_kind(r.get("fallback_reason") if "error" not in r else None)
        kinds[kind] = kinds.get(kind, 0) + 1
    out: dict[str, Any] = {"claims": len(llm_rows), "invalid": len(bad),
                           "invalid_rate": round(len(bad) / len(llm_rows), 4) if llm_rows else 0.0,
                           "why": kinds, "fallback_decided": decided}
    rated = [r for r in bad if model is not None and r["id"] in model]
    if rated:
        labels = [max(LABELS, key=lambda k: model[r["id"]].get(k, 0.0)) for r in rated]
        out["fallback_decided_oof"] = {k: labels.count(k) for k in LABELS if k in labels}
        out["fallback_accuracy_oof"] = round(sum(p == r["label"] for p, r in zip(labels, rated)) / len(rated), 4)
    return out


# -- the edges --------------------------------------------------------------------------------------
def record_llm(verifier: Any, cfg: Any, claims: Sequence[Mapping[str, Any]], out: Path, *,
               on_claim: Callable[[int, dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run the verdict step of ``cfg`` (its ``head_weight`` must be 0) on each claim's gold
    evidence and append one line per claim to ``out``; claims already in ``out`` are kept, so
    an interrupted recording resumes. Returns the number recorded and seconds per claim."""
    from plugin.lab.verification import request_for

    if cfg.head_weight != 0:
        raise BadInput("record the LLM's own ratings with the blend off (head_weight 0)")
    done = {r["id"] for r in read_jsonl(out)} if out.exists() else set()
    seconds = []
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a", encoding="utf-8") as fh:
        for i, claim in enumerate(claims):
            if str(claim["id"]) in done:
                continue
            t0 = time.perf_counter()
            row: dict[str, Any] = {"id": str(claim["id"]), "label": claim["label"]}
            try:
                res = verifier.verify(request_for(claim, "gold"), cfg)
            except FactSieveError as exc:
                row.update(llm_scores=None, verdict_llm=None, verdict=None, verdict_source="error",
                           error=f"{exc.title}: {str(exc)[:200]}")
            else:
                found = res.outcome
                llm_said = found.verdict_source == "llm"
                row.update(llm_scores=dict(found.label_scores) if llm_said else None,
                           verdict_llm=found.verdict if llm_said else None, verdict=found.verdict,
                           verdict_source=found.verdict_source,
                           fallback_reason=found.fallback_reason, tokens=res.tokens.to_dict())
            row["seconds"] = round(time.perf_counter() - t0, 2)
            seconds.append(row["seconds"])
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            fh.flush()
            if on_claim:
                on_claim(i, row)
    return {"recorded": len(seconds), "kept": len(done),
            "seconds_per_claim": round(sum(seconds) / len(seconds), 2) if seconds else None}


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    try:
        return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, ValueError) as exc:
        raise BadInput(f"cannot read {str(path)!r}: {exc}") from None


def read_oof(path: Path) -> dict[str, Any]:
    try:
        oof = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BadInput(f"cannot read the out-of-fold file {str(path)!r}: {exc}") from None
    if not isinstance(oof, dict) or not isinstance(oof.get("claims"), dict) or list(oof.get("labels", [])) != list(LABELS):
        raise BadInput(f"{path}: expected {{\"model\", \"labels\": {list(LABELS)}, \"claims\": {{id: {{label: p}}}}, …}}")
    return oof


def stratified_subset(claims: Sequence[Mapping[str, Any]], n: int, seed: int = 0) -> list[Mapping[str, Any]]:
    """``n`` claims with the labels in the proportions of ``claims`` (every label at least once
    when ``n`` allows), in their original order; ``seed`` shuffles within each label."""
    import numpy as np

    if n >= len(claims):
        return list(claims)
    rng = np.random.default_rng(seed)
    by: dict[str, list[int]] = {}
    for i, c in enumerate(claims):
        by.setdefault(c["label"], []).append(i)
    take = {k: max(1, round(n * len(v) / len(claims))) for k, v in by.items()}
    while sum(take.values()) > n:
        take[max(take, key=take.get)] -= 1
    keep = sorted(int(i) for k, v in by.items() for i in rng.permutation(v)[:take[k]])
    return [claims[i] for i in keep]


def head_oof(embedder: Any, datasets: Mapping[str, Path], *, folds: int = 5, shuffle: int = 0) -> dict[str, Any]:
    """The verdict head's out-of-fold probabilities on the averitec claims (gold evidence), with
    the extra datasets joining every training fold as ``train-verdict`` does."""
    import numpy as np

    from plugin.lab.verdict import EXTRA_WEIGHT, L2, LOADERS, TARGET, cross_validate, stratified_folds
    from plugin.verify.head import featurize

    examples = {n: LOADERS[n](Path(p)) for n, p in datasets.items()}
    names = [TARGET] + sorted(n for n in examples if n != TARGET)
    rows = [ex for n in names for ex in examples[n]]
    x = featurize(embedder, [(ex.claim, ex.pairs) for ex in rows])
    y = np.asarray([LABELS.index(ex.label) for ex in rows])
    source = np.asarray([ex.source for ex in rows])
    gold = [ex.label for ex in examples[TARGET]]
    probs = cross_validate(x, y, source, stratified_folds(gold, folds, shuffle), l2=L2,
                           extra_weight=EXTRA_WEIGHT)[0]
    return {"model": f"verdict head ({'+'.join(names)}, l2 {L2}, extra weight {EXTRA_WEIGHT})",
            "evidence": "gold", "folds": folds, "shuffle": shuffle, "labels": list(LABELS),
            "claims": {ex.id: {k: round(float(p), 4) for k, p in zip(LABELS, row)}
                       for ex, row in zip(examples[TARGET], probs)}}


def choose(llm_rows: Sequence[Mapping[str, Any]], oof: Mapping[str, Any],
           gold_claims: Sequence[Mapping[str, Any]], prior: float,
           grid: Sequence[float] = GRID) -> dict[str, Any]:
    """The report ``choose`` prints: the grid, the weight (ties to ``prior``), the procedure's
    out-of-fold score, the LLM alone and the model alone on the same claims, and the invalid
    outputs."""
    from plugin.lab.verdict import stratified_folds

    gold = [c["label"] for c in gold_claims]
    fold_of = dict(zip((str(c["id"]) for c in gold_claims),
                       (int(f) for f in stratified_folds(gold, int(oof.get("folds", 5)), int(oof.get("shuffle", 0))))))
    rows = [r for r in joined(llm_rows, oof) if r["id"] in fold_of]
    if not rows:
        raise BadInput("no claim is in both the LLM's recording and the out-of-fold file")
    res = nested_choice(rows, [fold_of[r["id"]] for r in rows], prior, grid)
    r4 = lambda d: {k: round(v, 4) for k, v in d.items()}  # noqa: E731
    llm_alone = label_metrics([r["verdict"] or LABELS[2] for r in rows], [r["label"] for r in rows])
    return {"claims": len(rows), "claims_with_valid_llm_output": sum(r["llm"] is not None for r in rows),
            "model": oof.get("model"), "evidence": oof.get("evidence"), "tie_prior": prior,
            "grid": {f"{w:.1f}": r4(s) for w, s in res["grid"].items()},
            "weight": res["weight"], "weight_per_fold": res["weight_per_fold"],
            "procedure_oof": {**r4({k: res["procedure_oof"][k] for k in ("macro_f1", "accuracy")}),
                              "per_class_f1": r4(res["procedure_oof"]["per_class_f1"])},
            "model_alone": r4(res["grid"][1.0]),
            "llm_alone": {**r4(res["grid"][0.0]),
                          "note": "w 0: the LLM's verdict, the model's where its output was invalid"},
            "llm_only_its_verdicts": {"macro_f1": round(llm_alone["macro_f1"], 4),
                                      "accuracy": round(llm_alone["accuracy"], 4),
                                      "note": "Not Enough Evidence where its output was invalid"},
            "llm_output": invalid_summary([r for r in llm_rows if r["id"] in fold_of], oof["claims"])}
