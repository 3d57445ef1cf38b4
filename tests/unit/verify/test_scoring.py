"""The AVeriTeC scorer against hand-worked values, and a committed slice scored end to end."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from plugin.errors import BadInput
from plugin.verify.scoring import (AVERITEC_LEVELS, LABELS, MAX_EVIDENCE, averitec_scores,
                                   hungarian_score, label_metrics, majority_baseline, meteor,
                                   meteor_matrix, nltk_tokenize, predicted_qa_strings,
                                   qa_strings, question_strings, score_evidence,
                                   score_predictions)
from plugin.verify.wordnet import WordNetMissing, ensure_wordnet

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = ROOT / "tests" / "fixtures" / "averitec"
NLTK_DATA = Path(os.environ.get("FACTSIEVE_CACHE", ROOT / ".cache")) / "nltk_data"


S, R, NEE, CE = LABELS


def exact(hyp, ref):
    """A stand-in pair score for the pure tests: 1 for identical token lists, else 0."""
    return 1.0 if list(hyp) == list(ref) else 0.0


def overlap(hyp, ref):
    """Share of reference tokens found in the hypothesis: easy to work out by hand."""
    return len(set(hyp) & set(ref)) / len(set(ref))


# -- Hungarian matching -------------------------------------------------------------------------
@pytest.mark.parametrize("matrix, n_gold, expected", [
    # Greedy would take 0.9 first and be left with 0.1: (0.9 + 0.1) / 2 = 0.5.
    ([[0.9, 0.8], [0.85, 0.1]], 2, (0.8 + 0.85) / 2),
    # More predictions than gold: only the best one is matched.
    ([[0.2], [0.7], [0.5]], 1, 0.7),
    # Fewer predictions than gold: unmatched gold items count as 0.
    ([[0.6, 0.3, 0.9]], 3, 0.9 / 3),
    ([[1.0, 0.0], [0.0, 1.0]], 2, 1.0),
    ([], 4, 0.0),
])
def test_hungarian_score(matrix, n_gold, expected):
    assert hungarian_score(matrix, n_gold) == pytest.approx(expected)


def test_hungarian_score_needs_gold():
    with pytest.raises(BadInput):
        hungarian_score([[0.5]], 0)


def test_meteor_matrix_rows_are_predictions():
    m = meteor_matrix(["a b", "c"], ["a b", "c", "d"], tokenize=str.split, pair_score=exact)
    assert m == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]


# -- comparison strings -------------------------------------------------------------------------
GOLD_QUESTIONS = [
    {"question": "Who said it?", "answers": [
        {"answer": "The mayor.", "answer_type": "Extractive"},
        {"answer": "A spokesman", "answer_type": "Abstractive"}]},
    {"question": "Is it true?", "answers": [
        {"answer": "No", "answer_type": "Boolean", "boolean_explanation": "The data say otherwise."}]},
    {"question": "When?", "answers": []},
    {"question": "Where?", "answers": {"answer": "Paris", "answer_type": "Extractive"}},
]


def test_qa_strings_one_per_answer_with_boolean_and_unanswered_forms():
    assert qa_strings(GOLD_QUESTIONS) == [
        "Who said it? The mayor.",
        "Who said it? A spokesman",
        "Is it true? No. The data say otherwise.",
        "When? No answer could be found.",
        "Where? Paris",
    ]


def test_question_strings_one_per_question():
    assert question_strings(GOLD_QUESTIONS) == ["Who said it?", "Is it true?", "When?", "Where?"]


def test_predicted_qa_strings_have_no_boolean_suffix():
    evidence = [{"question": "Is it true?", "answer": "No", "url": "https://example.org"},
                {"question": "Why?", "answer": None}]
    assert predicted_qa_strings(evidence) == ["Is it true? No", "Why? "]


# -- one claim's evidence -----------------------------------------------------------------------
def test_score_evidence_divides_by_gold_counts():
    gold = [{"question": "q1", "answers": [{"answer": "a1"}, {"answer": "a2"}]},
            {"question": "q2", "answers": [{"answer": "a3"}]}]
    pred = [{"question": "q1", "answer": "a2"}, {"question": "zz", "answer": "zz"}]
    scores = score_evidence(pred, gold, tokenize=str.split, pair_score=exact)
    assert scores == {"q_only": 1 / 2, "q_plus_a": 1 / 3}


def test_score_evidence_ignores_items_after_the_tenth():
    gold = [{"question": "right question", "answers": [{"answer": "right answer"}]}]
    pred = [{"question": f"other {i}", "answer": "x"} for i in range(MAX_EVIDENCE)]
    pred.append({"question": "right question", "answer": "right answer"})
    assert score_evidence(pred, gold, tokenize=str.split, pair_score=exact) == {
        "q_only": 0.0, "q_plus_a": 0.0}
    assert score_evidence(pred[-2:], gold, tokenize=str.split, pair_score=exact) == {
        "q_only": 1.0, "q_plus_a": 1.0}


def test_score_evidence_with_no_prediction_is_zero_and_gold_must_exist():
    gold = [{"question": "q", "answers": []}]
    assert score_evidence([], gold, tokenize=str.split, pair_score=overlap) == {
        "q_only": 0.0, "q_plus_a": 0.0}
    with pytest.raises(BadInput):
        score_evidence([{"question": "q", "answer": "a"}], [], pair_score=overlap)


# -- labels -------------------------------------------------------------------------------------
def test_label_metrics_against_a_hand_computed_confusion():
    gold = [S, S, S, R, R, R, R, NEE, CE, CE]
    pred = [S, S, R, R, R, R, S, R, CE, NEE]
    m = label_metrics(pred, gold)
    assert m["confusion"] == {
        S: {S: 2, R: 1, NEE: 0, CE: 0},
        R: {S: 1, R: 3, NEE: 0, CE: 0},
        NEE: {S: 0, R: 1, NEE: 0, CE: 0},
        CE: {S: 0, R: 0, NEE: 1, CE: 1},
    }
    assert m["accuracy"] == pytest.approx(6 / 10)
    # F1 = 2TP / (2TP + FP + FN): S 4/(4+1+1), R 6/(6+2+1), NEE 0, CE 2/(2+0+1)
    expected = {S: 4 / 6, R: 6 / 9, NEE: 0.0, CE: 2 / 3}
    assert m["per_class_f1"] == pytest.approx(expected)
    assert m["macro_f1"] == pytest.approx(sum(expected.values()) / 4)


def test_macro_f1_averages_absent_classes_as_zero():
    m = label_metrics([R, R], [R, R])
    assert m["per_class_f1"] == {S: 0.0, R: 1.0, NEE: 0.0, CE: 0.0}
    assert m["macro_f1"] == 0.25


def test_unknown_labels_are_bad_input():
    with pytest.raises(BadInput, match="False"):
        label_metrics(["False"], [R])
    with pytest.raises(BadInput):
        label_metrics([R], [R, S])


def test_majority_baseline():
    # 3 Refuted of 5: accuracy 3/5; F1(Refuted) = 6/(6+2) = 0.75, the others 0.
    assert majority_baseline([R, S, R, NEE, R]) == {
        "label": R, "accuracy": 3 / 5, "macro_f1": 0.75 / 4}
    assert majority_baseline([CE, S])["label"] == S  # ties go to the first in LABELS


# -- AVeriTeC score -----------------------------------------------------------------------------
def test_averitec_score_needs_score_strictly_above_the_level_and_the_right_verdict():
    qa = [0.25, 0.26, 0.9, 0.05]
    correct = [True, True, False, True]
    assert averitec_scores(qa, correct) == {
        "0.1": 2 / 4, "0.2": 2 / 4, "0.25": 1 / 4, "0.3": 0.0, "0.4": 0.0, "0.5": 0.0}
    assert list(averitec_scores(qa, correct)) == [str(x) for x in AVERITEC_LEVELS]


def test_score_predictions_matches_by_id_and_reports_every_number():
    gold = [{"id": "a", "label": R, "questions": [{"question": "q1", "answers": [{"answer": "x"}]}]},
            {"id": "b", "label": S, "questions": [{"question": "q2", "answers": [{"answer": "y"}]}]}]
    preds = [{"id": "b", "pred_label": S, "evidence": [{"question": "q2", "answer": "y"}]},
             {"id": "a", "pred_label": S, "evidence": [{"question": "q1", "answer": "x"}]},
             {"id": "not-in-gold", "pred_label": S, "evidence": []}]
    out = score_predictions(gold, preds, tokenize=str.split, pair_score=exact, levels=(0.5,))
    assert out["n_claims"] == 2
    assert (out["q_only"], out["q_plus_a"]) == (1.0, 1.0)
    assert out["label_accuracy"] == 0.5
    assert out["averitec_score"] == {"0.5": 0.5}
    assert (out["majority_label"], out["majority_accuracy"]) == (S, 0.5)
    assert set(out) >= {"macro_f1", "per_class_f1", "majority_macro_f1", "confusion"}


def test_score_predictions_rejects_missing_and_duplicate_predictions():
    gold = [{"id": "a", "label": R, "questions": [{"question": "q", "answers": []}]}]
    with pytest.raises(BadInput, match="'a'"):
        score_predictions(gold, [], pair_score=exact)
    dup = {"id": "a", "pred_label": R, "evidence": []}
    with pytest.raises(BadInput, match="two predictions"):
        score_predictions(gold, [dup, dup], pair_score=exact)


# -- nltk: tokeniser, WordNet, METEOR -----------------------------------------------------------
def test_tokenizer_keeps_the_string_as_one_line():
    # No punkt sentence split: a period inside the string stays on its word ("Yes.").
    assert nltk_tokenize("Did Sean Connery's letter exist? Yes. It did.") == [
        "Did", "Sean", "Connery", "'s", "letter", "exist", "?", "Yes.", "It", "did", "."]


def test_missing_wordnet_names_the_setup_script(tmp_path):
    with pytest.raises(WordNetMissing, match="scripts/wordnet.sh"):
        ensure_wordnet(tmp_path)


@pytest.fixture(scope="module")
def wordnet():
    """`make test` and `make unit` fetch WordNet first (`make wordnet`): missing, ensure_wordnet's
    WordNetMissing (naming scripts/wordnet.sh) fails the tests that need it."""
    return ensure_wordnet(NLTK_DATA)


@pytest.mark.parametrize("hypothesis, reference, expected", [
    # METEOR = Fmean · (1 − 0.5·(chunks/matches)³), Fmean = P·R / (0.9·P + 0.1·R).
    # All four match (dog~hound through WordNet), one chunk: 1 − 0.5/64.
    ("the hound barked loudly", "the dog barked loudly", 1 - 0.5 / 4**3),
    ("a b c d e f g h i j", "a b c d e f g h i j", 0.9995),
    # P = 1, R = 1/2; nltk aligns "the" with the *last* "the" of the reference, so 2 chunks.
    ("the cat sat", "the cat sat on the mat", 0.5 / 0.95 * (1 - 0.5 * (2 / 3) ** 3)),
    # Swapped: P = 1/2, R = 1 — recall weighs 9× precision, so the score is higher.
    ("the cat sat on the mat", "the cat sat", 0.5 / 0.55 * (1 - 0.5 * (2 / 3) ** 3)),
    ("completely different", "nothing shared", 0.0),
])
def test_meteor_hand_worked(wordnet, hypothesis, reference, expected):
    assert meteor(hypothesis.split(), reference.split(), wordnet=wordnet) == pytest.approx(expected)


def _read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_fixture_slice_end_to_end(wordnet):
    """10 AVeriTeC dev claims + HerO-8B predictions, scored with nltk METEOR and WordNet 3.0.

    Expected values come from this scorer, which reproduces the published full-set reference
    numbers (scripts/check_averitec_reference.py); the label metrics are checkable by hand.
    """
    out = score_predictions(_read_jsonl(FIXTURE / "claims.jsonl"),
                            _read_jsonl(FIXTURE / "hero_8b_predictions.jsonl"))
    assert out["n_claims"] == 10
    assert out["q_only"] == pytest.approx(0.3969409227465689, abs=1e-12)
    assert out["q_plus_a"] == pytest.approx(0.27269791171573143, abs=1e-12)
    assert out["averitec_score"] == pytest.approx(
        {"0.1": 0.4, "0.2": 0.3, "0.25": 0.1, "0.3": 0.1, "0.4": 0.0, "0.5": 0.0})
    assert out["label_accuracy"] == pytest.approx(0.4)
    # S: TP 1, FP 4, FN 1 → 2/7; R: 4/6; NEE: 2/4; CE: 0.
    assert out["per_class_f1"] == pytest.approx({S: 2 / 7, R: 2 / 3, NEE: 0.5, CE: 0.0})
    assert out["macro_f1"] == pytest.approx((2 / 7 + 2 / 3 + 0.5) / 4)
    assert out["confusion"] == {S: {S: 1, R: 0, NEE: 0, CE: 1}, R: {S: 1, R: 2, NEE: 0, CE: 1},
                                NEE: {S: 2, R: 0, NEE: 1, CE: 0}, CE: {S: 1, R: 0, NEE: 0, CE: 0}}
    assert (out["majority_label"], out["majority_accuracy"]) == (R, 0.4)
    assert out["majority_macro_f1"] == pytest.approx((2 * 4 / (2 * 4 + 6)) / 4)


def test_fixture_per_claim_scores(wordnet):
    """Per-claim Q+A scores decide the thresholds; dev-10 (wrong verdict) is the only one > 0.5."""
    gold = {r["id"]: r for r in _read_jsonl(FIXTURE / "claims.jsonl")}
    preds = {p["id"]: p for p in _read_jsonl(FIXTURE / "hero_8b_predictions.jsonl")}
    scores = {i: score_evidence(preds[i]["evidence"], gold[i]["questions"]) for i in gold}
    assert scores["dev-26"] == pytest.approx(
        {"q_only": 0.6578126488946066, "q_plus_a": 0.33400577708529694}, abs=1e-12)
    assert scores["dev-2"] == pytest.approx(
        {"q_only": 0.40502983106094365, "q_plus_a": 0.2290611084448063}, abs=1e-12)
    assert [i for i, s in scores.items() if s["q_plus_a"] > 0.5] == ["dev-10"]
