"""Choosing the blend weight: the verifier's decision per weight, the pick, and nested CV."""
import pytest

from plugin.lab.blend import (GRID, blend_verdict, choose, grid_scores, invalid_kind, invalid_summary,
                              nested_choice, pick, stratified_subset)
from plugin.verify.scoring import LABELS

S, R, N, C = LABELS


def probs(**kw):
    out = {k: 0.0 for k in LABELS}
    out.update({{"s": S, "r": R, "n": N, "c": C}[k]: v for k, v in kw.items()})
    return out


@pytest.mark.parametrize("llm, verdict, model, w, expected", [
    (probs(s=0.9, r=0.1), S, probs(r=0.8, s=0.2), 0.0, S),   # w 0: the LLM's verdict
    (probs(s=0.9, r=0.1), S, probs(r=0.8, s=0.2), 0.5, S),   # 0.55 vs 0.45
    (probs(s=0.9, r=0.1), S, probs(r=0.8, s=0.2), 0.6, R),   # 0.48 vs 0.52
    (probs(s=0.9, r=0.1), S, probs(r=0.8, s=0.2), 1.0, R),   # w 1: the model alone
    (None, None, probs(n=0.6, r=0.4), 0.0, N),               # invalid output: the fallback
    (None, None, probs(n=0.6, r=0.4), 0.7, N),
    (probs(s=0.5, r=0.5), R, probs(), 0.0, R),               # a tie at w 0: the LLM chose
    (probs(s=0.5, r=0.5), R, probs(), 0.3, S),               # a tie in the blend: the first label
])
def test_the_verdict_for_a_weight_is_the_verifiers(llm, verdict, model, w, expected):
    assert blend_verdict(llm, verdict, model, w) == expected


SAME = {"macro_f1": 0.4, "accuracy": 0.5}


@pytest.mark.parametrize("scores, prior, expected", [
    ({0.0: {"macro_f1": 0.3, "accuracy": 0.5}, 0.5: {"macro_f1": 0.4, "accuracy": 0.4}}, 0.0, 0.5),
    ({0.0: SAME, 0.5: {"macro_f1": 0.4, "accuracy": 0.6}}, 0.0, 0.5),
    ({0.2: SAME, 0.1: SAME}, 0.0, 0.1),
    ({w: SAME for w in GRID}, 0.6, 0.6),  # the data cannot tell them apart: the prior
    ({0.2: SAME, 1.0: SAME}, 0.6, 0.2),   # else the nearest to it
    ({0.4: SAME, 0.8: SAME}, 0.6, 0.4),   # equally near: the smaller
])
def test_pick_takes_the_best_macro_f1_then_accuracy_then_the_weight_nearest_the_prior(scores, prior, expected):
    assert pick(scores, prior) == expected


def row(label, llm, verdict, model):
    return {"label": label, "llm": llm, "verdict": verdict, "model": model}


#: The LLM is right on Supported claims, the model on Refuted ones; both are sure.
ROWS = ([row(S, probs(s=1.0), S, probs(s=0.4, r=0.6)) for _ in range(4)]
        + [row(R, probs(s=1.0), S, probs(r=0.9, s=0.1)) for _ in range(4)])


def test_the_grid_scores_every_weight_and_the_middle_wins_when_each_is_right_on_half():
    table = grid_scores(ROWS)
    assert list(table) == list(GRID)
    assert table[0.0]["accuracy"] == 0.5 and table[1.0]["accuracy"] == 0.5
    # from w 0.6 the model overturns the LLM on the Refuted claims (Refuted 0.54 against 0.46),
    # up to 0.8 not on the Supported ones (0.52 against 0.48); 0.6–0.8 tie: the smallest
    assert [table[w]["accuracy"] for w in (0.5, 0.6, 0.8, 0.9)] == [0.5, 1.0, 1.0, 0.5]
    assert pick(table, 0.0) == 0.6 and pick(table, 1.0) == 0.8


def test_nested_choice_scores_each_fold_with_the_weight_picked_on_the_others():
    folds = [0, 1, 0, 1, 0, 1, 0, 1]
    res = nested_choice(ROWS, folds, 0.0)
    assert res["weight"] == 0.6 and res["weight_per_fold"] == {0: 0.6, 1: 0.6}
    assert res["procedure_oof"]["accuracy"] == 1.0
    # a fold whose training claims point elsewhere is scored with that weight, not the final one
    rows = ROWS[:4] + [row(R, probs(s=1.0), S, probs(r=0.9, s=0.1))]
    res = nested_choice(rows, [0, 0, 1, 1, 1], 0.0)
    assert res["weight_per_fold"][1] == 0.0  # its other fold held only Supported claims


def test_choose_reports_the_llm_alone_the_model_alone_and_its_invalid_outputs():
    claims = [{"id": f"c{i}", "label": r["label"]} for i, r in enumerate(ROWS)] + [{"id": "c8", "label": N}]
    llm_rows = [{"id": f"c{i}", "label": r["label"], "llm_scores": r["llm"], "verdict_llm": r["verdict"],
                 "verdict": r["verdict"], "verdict_source": "llm"} for i, r in enumerate(ROWS)]
    llm_rows.append({"id": "c8", "label": N, "llm_scores": None, "verdict_llm": None, "verdict": N,
                     "verdict_source": "head", "fallback_reason": "invalid LLM output after one retry: "
                     "the LLM answered: every label is rated 0"})
    oof = {"model": "m", "evidence": "gold", "folds": 2, "shuffle": 0, "labels": list(LABELS),
           "claims": {**{f"c{i}": r["model"] for i, r in enumerate(ROWS)}, "c8": probs(n=0.9)}}
    rep = choose(llm_rows, oof, claims, prior=0.0)
    assert rep["claims"] == 9 and rep["claims_with_valid_llm_output"] == 8 and set(rep["grid"]) == {f"{w:.1f}" for w in GRID}
    assert rep["weight"] == 0.6 and rep["model_alone"] == rep["grid"]["1.0"]
    assert rep["llm_output"]["invalid"] == 1 and rep["llm_output"]["fallback_decided"] == {"head": {N: 1}}
    invalid = [{**r, "llm_scores": None, "verdict_llm": None} for r in llm_rows]
    only_invalid = choose(invalid, oof, claims, prior=0.6)  # nothing tells the weights apart
    assert only_invalid["weight"] == 0.6 and set(only_invalid["weight_per_fold"].values()) == {0.6}


@pytest.mark.parametrize("reason, kind", [
    ("invalid LLM output after one retry: the LLM at http://x/v1 answered with no valid VerdictOut "
     "after one retry (1 schema error(s), first at the answer: Value error, every label is rated 0: "
     "the ratings support no verdict); the answer began: '{}'", "every label rated 0"),
    ("… the verdict 'Supported' is rated 0.10, under 'Refuted' at 0.90: the verdict must be the label "
     "with the highest rating", "verdict not its highest rating"),
    ("… (not JSON); the answer was cut at max_tokens=16: raise it", "cut at max_tokens"),
    ("… (1 schema error(s), first at verdict: Input should be 'Supported', …)", "other schema error"),
    (None, "failed"),
])
def test_invalid_outputs_are_sorted_by_why(reason, kind):
    assert invalid_kind(reason) == kind


def test_invalid_summary_counts_the_fallbacks_why_and_what_they_decided_out_of_fold():
    rows = [{"id": "a", "label": R, "llm_scores": None, "verdict": R, "verdict_source": "head",
             "fallback_reason": "invalid LLM output after one retry: x: every label is rated 0"},
            {"id": "b", "label": S, "llm_scores": None, "verdict": S, "verdict_source": "head",
             "fallback_reason": "invalid LLM output after one retry: x: every label is rated 0"},
            {"id": "c", "label": S, "llm_scores": {S: 1.0}, "verdict": S, "verdict_source": "llm"}]
    got = invalid_summary(rows, {"a": probs(r=0.9), "b": probs(r=0.8), "c": probs(s=1.0)})
    assert got["invalid"] == 2 and got["invalid_rate"] == 0.6667 and got["why"] == {"every label rated 0": 2}
    assert got["fallback_decided"] == {"head": {R: 1, S: 1}}  # as recorded (an in-sample head)
    assert got["fallback_decided_oof"] == {R: 2} and got["fallback_accuracy_oof"] == 0.5


def test_a_stratified_subset_keeps_the_label_shares_and_grows_by_adding():
    claims = [{"id": i, "label": S if i % 4 == 0 else R} for i in range(40)]
    small, big = stratified_subset(claims, 8), stratified_subset(claims, 20)
    assert [c["label"] for c in small].count(S) == 2 and len(small) == 8
    assert {c["id"] for c in small} <= {c["id"] for c in big}
    assert stratified_subset(claims, 100) == claims


def test_the_command_chooses_from_files_and_writes_the_weight_for_the_llm(tmp_path, capsys):
    import json

    from cli.main import main
    from plugin.verify.blend import load_table

    claims = [{"id": f"c{i}", "claim": "x", "label": r["label"]} for i, r in enumerate(ROWS)]
    (tmp_path / "claims.jsonl").write_text("".join(json.dumps(c) + "\n" for c in claims))
    (tmp_path / "llm.jsonl").write_text("".join(json.dumps(
        {"id": f"c{i}", "label": r["label"], "llm_scores": r["llm"], "verdict_llm": r["verdict"],
         "verdict": r["verdict"], "verdict_source": "llm"}) + "\n" for i, r in enumerate(ROWS)))
    (tmp_path / "oof.json").write_text(json.dumps(
        {"model": "m", "evidence": "gold", "folds": 2, "shuffle": 0, "labels": list(LABELS),
         "claims": {f"c{i}": r["model"] for i, r in enumerate(ROWS)}}))
    table = tmp_path / "blend.json"
    table.write_text(json.dumps({"default": 0.6, "models": {"other": 0.2}}))
    argv = ["blend-weight", "choose", "--averitec", str(tmp_path), "--llm-ratings", str(tmp_path / "llm.jsonl"),
            "--oof", str(tmp_path / "oof.json"), "--table", str(table), "--llm-model", "an-llm"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["weight"] == 0.6 and "written" not in report
    assert load_table(table)["models"] == {"other": 0.2}  # nothing written without --write
    assert main([*argv, "--write", str(table)]) == 0
    assert json.loads(capsys.readouterr().out)["written"] == {"table": str(table), "llm_model": "an-llm",
                                                              "weight": 0.6}
    assert load_table(table) == {"default": 0.6, "models": {"an-llm": 0.6, "other": 0.2}}
    assert main([*argv[:-2], "--llm-model", "", "--write", str(table)]) == 2  # a weight for no name is refused
    # never into the installed package: refused before anything is written (issue 36)
    from plugin.verify.blend import packaged_path

    before = packaged_path().read_bytes()
    assert main([*argv, "--write", str(packaged_path())]) == 2
    assert "inside the installed package" in capsys.readouterr().err
    assert packaged_path().read_bytes() == before
