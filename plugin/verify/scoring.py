"""The AVeriTeC verification score (Schlichtkrull et al., NeurIPS 2023), as pure functions.

Follows the organisers' ``eval.py`` (and HerO's copy of it for the ``{"evidence", "pred_label"}``
prediction shape) decision by decision, so its numbers reproduce the published ones:

- Evidence is scored with *Hungarian-matched METEOR* (HU-METEOR): a METEOR matrix of the first
  ``MAX_EVIDENCE`` (10) predicted items × all gold items, the one-to-one assignment with the
  largest sum, divided by the number of *gold* items (so missing evidence costs, extra does not).
- Q-only compares questions; Q+A compares ``"question answer"`` strings (see :func:`qa_strings`).
- A claim counts towards the AVeriTeC score at a level when its Q+A score is strictly *above*
  the level and its verdict is right; the headline level is 0.25.

Tokenisation: nltk ``word_tokenize(text, preserve_line=True)``, because the punkt sentence tables
are not obtainable here; the reference numbers were computed the same way. METEOR needs WordNet
(``plugin.verify.wordnet.ensure_wordnet``) for its synonym stage.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from plugin.errors import BadInput

#: The four AVeriTeC verdicts, in the order the official scorer reports them.
LABELS: tuple[str, ...] = ("Supported", "Refuted", "Not Enough Evidence",
                           "Conflicting Evidence/Cherrypicking")
#: The official reporting levels; 0.25 is the headline AVeriTeC score.
AVERITEC_LEVELS: tuple[float, ...] = (0.1, 0.2, 0.25, 0.3, 0.4, 0.5)
#: Only the first 10 predicted evidence items are scored (the task's limit).
MAX_EVIDENCE = 10
#: What the official scorer writes for a gold question that annotators could not answer.
NO_ANSWER = "No answer could be found."

Tokenizer = Callable[[str], list[str]]
#: ``pair_score(hypothesis_tokens, reference_tokens) -> float``; METEOR by default.
PairScore = Callable[[Sequence[str], Sequence[str]], float]


def nltk_tokenize(text: str) -> list[str]:
    """nltk's Treebank word tokeniser on the whole string as one line (no punkt sentence split)."""
    from nltk import word_tokenize

    return word_tokenize(text, preserve_line=True)


def meteor(hypothesis: Sequence[str], reference: Sequence[str], *, wordnet: Any = None) -> float:
    """METEOR (Banerjee & Lavie 2005) as nltk computes it: exact, Porter-stem, WordNet synonyms.

    Note the argument order: the prediction (hypothesis) comes first here, nltk's own
    ``single_meteor_score`` takes the reference first. METEOR is asymmetric (recall weighs 9×
    precision), so swapping them changes the score. ``wordnet`` defaults to nltk's corpus on
    ``nltk.data.path``.
    """
    from nltk.translate.meteor_score import single_meteor_score

    try:
        if wordnet is None:
            return single_meteor_score(reference, hypothesis)
        return single_meteor_score(reference, hypothesis, wordnet=wordnet)
    except LookupError as err:
        from plugin.verify.wordnet import SETUP_HINT, WordNetMissing

        raise WordNetMissing(f"METEOR needs WordNet, which nltk cannot find: {SETUP_HINT}") from err


def meteor_matrix(pred_strings: Sequence[str], gold_strings: Sequence[str], *,
                  tokenize: Tokenizer = nltk_tokenize,
                  pair_score: PairScore = meteor) -> list[list[float]]:
    """Pairwise scores, one row per predicted string and one column per gold string.

    Each string is tokenised once (the official scorer re-tokenises per pair: same tokens,
    more time).
    """
    pred_tokens = [tokenize(s) for s in pred_strings]
    gold_tokens = [tokenize(s) for s in gold_strings]
    return [[pair_score(p, g) for g in gold_tokens] for p in pred_tokens]


def hungarian_score(matrix: Sequence[Sequence[float]], n_gold: int) -> float:
    """Sum of the maximum-weight one-to-one assignment (Kuhn–Munkres) ÷ ``n_gold``.

    Dividing by the gold count, not the number of pairs, makes unmatched gold items score 0;
    unmatched predictions are free. An empty side scores 0.
    """
    if n_gold <= 0:
        raise BadInput("hungarian_score needs at least one gold item")
    if len(matrix) == 0 or len(matrix[0]) == 0:
        return 0.0
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    scores = np.asarray(matrix, dtype=float)
    rows, cols = linear_sum_assignment(scores, maximize=True)
    return float(scores[rows, cols].sum()) / n_gold


def question_strings(gold_questions: Iterable[Mapping[str, Any]]) -> list[str]:
    """The questions alone (Q-only), one per gold question or predicted item."""
    return [q["question"] for q in gold_questions]


def qa_strings(gold_questions: Iterable[Mapping[str, Any]]) -> list[str]:
    """Gold ``"question answer"`` strings, one per *answer* (a question may have several).

    As the official scorer builds them: a Boolean answer is followed by ``". "`` and its
    ``boolean_explanation``; a question with no answers becomes
    ``"question No answer could be found."``; an answer that is not in a list is wrapped in one.
    """
    strings: list[str] = []
    for q in gold_questions:
        answers = q.get("answers") or []
        if not isinstance(answers, list):
            answers = [answers]
        for a in answers:
            s = f"{q['question']} {a['answer']}"
            if a.get("answer_type") == "Boolean":
                s += ". " + a.get("boolean_explanation", "")
            strings.append(s)
        if not answers:
            strings.append(f"{q['question']} {NO_ANSWER}")
    return strings


def predicted_qa_strings(evidence: Iterable[Mapping[str, Any]]) -> list[str]:
    """Predicted ``"question answer"`` strings, one per evidence item (no Boolean suffix)."""
    return [f"{e['question']} {e.get('answer') or ''}" for e in evidence]


def score_evidence(pred_items: Sequence[Mapping[str, Any]],
                   gold_questions: Sequence[Mapping[str, Any]], *,
                   tokenize: Tokenizer = nltk_tokenize,
                   pair_score: PairScore = meteor) -> dict[str, float]:
    """HU-METEOR of one claim's predicted evidence: ``{"q_only", "q_plus_a"}``.

    Only the first ``MAX_EVIDENCE`` predicted items count, for both scores.
    """
    if not gold_questions:
        raise BadInput("a gold claim has no questions; its evidence score is undefined")
    pred_items = list(pred_items)[:MAX_EVIDENCE]
    gold_q = question_strings(gold_questions)
    gold_qa = qa_strings(gold_questions)
    q_matrix = meteor_matrix(question_strings(pred_items), gold_q, tokenize=tokenize,
                             pair_score=pair_score)
    qa_matrix = meteor_matrix(predicted_qa_strings(pred_items), gold_qa, tokenize=tokenize,
                              pair_score=pair_score)
    return {"q_only": hungarian_score(q_matrix, len(gold_q)),
            "q_plus_a": hungarian_score(qa_matrix, len(gold_qa))}


def _check_labels(labels: Iterable[str], what: str) -> None:
    unknown = sorted({label for label in labels if label not in LABELS})
    if unknown:
        raise BadInput(f"unknown {what} label(s) {unknown}; expected one of {list(LABELS)}")


def label_metrics(pred_labels: Sequence[str], gold_labels: Sequence[str]) -> dict[str, Any]:
    """Accuracy, per-class and macro F1 over the four verdicts, and the confusion matrix.

    F1 of a class is ``2·TP / (2·TP + FP + FN)``, 0 when the class is neither predicted nor
    present (scikit-learn's ``zero_division`` default); macro-F1 is the unweighted mean over all
    four classes, absent ones included, as the official scorer passes ``labels=`` explicitly.
    ``confusion[gold][predicted]`` counts claims.
    """
    if len(pred_labels) != len(gold_labels):
        raise BadInput(f"{len(pred_labels)} predicted labels for {len(gold_labels)} gold labels")
    if not gold_labels:
        raise BadInput("no labels to score")
    _check_labels(gold_labels, "gold")
    _check_labels(pred_labels, "predicted")
    confusion = {g: {p: 0 for p in LABELS} for g in LABELS}
    for p, g in zip(pred_labels, gold_labels):
        confusion[g][p] += 1
    per_class: dict[str, float] = {}
    for label in LABELS:
        tp = confusion[label][label]
        fp = sum(confusion[g][label] for g in LABELS) - tp
        fn = sum(confusion[label].values()) - tp
        per_class[label] = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    correct = sum(confusion[label][label] for label in LABELS)
    return {"accuracy": correct / len(gold_labels),
            "macro_f1": sum(per_class.values()) / len(LABELS),
            "per_class_f1": per_class,
            "confusion": confusion}


def majority_baseline(gold_labels: Sequence[str]) -> dict[str, Any]:
    """Always predict the most frequent gold label (ties: the first in ``LABELS``).

    The floor any verdict model must beat on the same claims; on AVeriTeC's skewed labels
    (mostly Refuted) its accuracy is high and its macro-F1 low.
    """
    _check_labels(gold_labels, "gold")
    counts = Counter(gold_labels)
    label = max(LABELS, key=lambda x: (counts[x], -LABELS.index(x)))
    metrics = label_metrics([label] * len(gold_labels), gold_labels)
    return {"label": label, "accuracy": metrics["accuracy"], "macro_f1": metrics["macro_f1"]}


def averitec_scores(qa_scores: Sequence[float], correct: Sequence[bool], *,
                    levels: Sequence[float] = AVERITEC_LEVELS) -> dict[str, float]:
    """Share of claims whose Q+A evidence score is strictly above the level *and* verdict is right.

    Keys are the levels as ``str(level)`` (``"0.25"``). Strictly above (``>``), as in the
    official scorer, so a claim exactly at the level does not count.
    """
    if len(qa_scores) != len(correct):
        raise BadInput(f"{len(qa_scores)} evidence scores for {len(correct)} verdicts")
    if not qa_scores:
        raise BadInput("no claims to score")
    return {str(level): sum(1 for s, ok in zip(qa_scores, correct) if ok and s > level)
            / len(qa_scores) for level in levels}


def score_predictions(gold_records: Sequence[Mapping[str, Any]],
                      predictions: Iterable[Mapping[str, Any]], *,
                      levels: Sequence[float] = AVERITEC_LEVELS,
                      tokenize: Tokenizer = nltk_tokenize,
                      pair_score: PairScore = meteor) -> dict[str, Any]:
    """Every AVeriTeC number for ``predictions`` on ``gold_records``, matched by ``id``.

    Gold records carry ``id``, ``label`` and ``questions`` (AVeriTeC's shape); a prediction is
    ``{"id", "pred_label", "evidence": [{"question", "answer", "url"?}]}``. Every gold claim needs
    a prediction; predictions for other ids are ignored. Q-only and Q+A are means over claims.
    """
    by_id: dict[str, Mapping[str, Any]] = {}
    for pred in predictions:
        if pred["id"] in by_id:
            raise BadInput(f"two predictions for claim {pred['id']!r}")
        by_id[pred["id"]] = pred
    missing = [g["id"] for g in gold_records if g["id"] not in by_id]
    if missing:
        raise BadInput(f"no prediction for {len(missing)} gold claim(s), e.g. {missing[:5]}")
    if not gold_records:
        raise BadInput("no gold claims to score")

    q_only, q_plus_a, pred_labels, gold_labels = [], [], [], []
    for gold in gold_records:
        pred = by_id[gold["id"]]
        scores = score_evidence(pred.get("evidence") or [], gold["questions"], tokenize=tokenize,
                                pair_score=pair_score)
        q_only.append(scores["q_only"])
        q_plus_a.append(scores["q_plus_a"])
        pred_labels.append(pred["pred_label"])
        gold_labels.append(gold["label"])

    labels = label_metrics(pred_labels, gold_labels)
    majority = majority_baseline(gold_labels)
    correct = [p == g for p, g in zip(pred_labels, gold_labels)]
    n = len(gold_records)
    return {"n_claims": n,
            "label_accuracy": labels["accuracy"],
            "macro_f1": labels["macro_f1"],
            "per_class_f1": labels["per_class_f1"],
            "majority_label": majority["label"],
            "majority_accuracy": majority["accuracy"],
            "majority_macro_f1": majority["macro_f1"],
            "confusion": labels["confusion"],
            "q_only": sum(q_only) / n,
            "q_plus_a": sum(q_plus_a) / n,
            "averitec_score": averitec_scores(q_plus_a, correct, levels=levels)}
