"""The verdict head: features, the softmax regression, the artifact and its refusals, training
end to end on a tiny synthetic set, and (marked ``model``) the committed artifact."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from plugin.errors import BadInput, ModelMismatch, ModelUnavailable
from plugin.lab import verdict as lab
from plugin.verify import head
from plugin.verify.scoring import LABELS, NO_ANSWER
from tests.stub_embedder import hashing_embedder


FakeEmbedder = hashing_embedder


def qa(question: str, answer: str) -> dict:
    return {"question": question, "answer": answer}


# -- features ---------------------------------------------------------------------------------
@pytest.mark.parametrize("pair, text", [
    (qa("Who said it?", "The  mayor.\n"), "Who said it? The mayor."),
    (qa("Q", ""), "Q"),
    ({"question": None, "answer": "A"}, "A"),
])
def test_pair_text(pair, text):
    assert head.pair_text(pair) == text


@pytest.mark.parametrize("answers, cues", [
    ([], [0, 0, 0, 0]),
    ([NO_ANSWER], [1, 0, 0, 0]),
    (["Yes. He did."], [0, 1, 0, 0]),
    (["No. It was never said."], [0, 0, 1, 1]),
    (["Nobody knows", "The claim is a hoax"], [0, 0, 0, 0.5]),
    (["It isn't true", "yes", NO_ANSWER, "No"], [0.25, 0.25, 0.25, 0.5]),
])
def test_answer_cues(answers, cues):
    got = head.answer_cues([qa("q", a) for a in answers])
    assert got.tolist() == pytest.approx(cues)


def test_pool_features_by_hand():
    c = np.array([1.0, 0.0], dtype=np.float32)
    e = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    cues = np.array([0.0, 0.5, 0.5, 0.0], dtype=np.float32)
    f = head.pool_features(c, e, cues)
    assert f.shape == (head.feature_dim(2),)
    assert f.tolist() == pytest.approx([1, 0,            # c
                                        0.5, 0.5,        # mean e
                                        1, 1,            # max e
                                        0.5, 0,          # c * mean
                                        0.5, 0.5,        # |c - mean|
                                        0.5, 1, 0, np.log(3),  # cos mean/max/min, log(1 + n)
                                        0, 0.5, 0.5, 0])


def test_pool_features_without_pairs_uses_the_claim_alone():
    c = np.array([0.6, 0.8], dtype=np.float32)
    f = head.pool_features(c, np.zeros((0, 2), dtype=np.float32), head.answer_cues([]))
    assert f[:2].tolist() == pytest.approx([0.6, 0.8])
    assert f[2:8].tolist() == [0] * 6 and f[8:10].tolist() == pytest.approx([0.6, 0.8])
    assert f[10:].tolist() == [0] * 8


def test_featurize_batches_and_matches_one_by_one():
    items = [("claim one", [qa("a", "b"), qa("c", "Yes")]), ("claim two", []),
             ("claim three", [qa(f"q{i}", "x") for i in range(head.MAX_PAIRS + 3)])]
    emb = FakeEmbedder()
    together = head.featurize(emb, items, batch=4)
    assert together.shape == (3, head.feature_dim(8))
    # 3 claims in one batch; 2 + 0 + MAX_PAIRS (the rest ignored) pair texts in batches of 4
    assert emb.counts[0] == ("q", 3)
    assert [n for kind, n in emb.counts if kind == "p"] == [4, 4, 4]
    single = np.concatenate([head.featurize(FakeEmbedder(), [it]) for it in items])
    assert np.allclose(together, single, atol=1e-6)


# -- the classifier ---------------------------------------------------------------------------
def test_class_weights_balance_the_classes():
    y = np.array([1, 1, 1, 0])
    w = lab.class_weights(y)
    assert w.tolist() == pytest.approx([4 / 6, 4 / 6, 4 / 6, 2.0])
    assert w[y == 1].sum() == pytest.approx(w[y == 0].sum())


def test_sample_weights_per_dataset():
    y = np.array([0, 1, 1, 0, 0, 2])
    source = np.array(["averitec", "averitec", "averitec", "liar_plus", "liar_plus", "liar_plus"])
    w = lab.sample_weights(y, source, extra_weight=0.1)
    assert w[:3].sum() == pytest.approx(1.0) and w[3:].sum() == pytest.approx(0.1)
    assert w[1] == w[2] and w[0] == pytest.approx(w[1] + w[2])


def test_stratified_folds_deal_each_label_evenly():
    labels = [LABELS[1]] * 10 + [LABELS[0]] * 5 + [LABELS[2]] * 5
    fold = lab.stratified_folds(labels, 5, seed=0)
    assert np.bincount(fold).tolist() == [4, 4, 4, 4, 4]
    for label in set(labels):
        at = np.asarray(labels) == label
        assert np.bincount(fold[at], minlength=5).max() - np.bincount(fold[at], minlength=5).min() <= 1
    assert (lab.stratified_folds(labels, 5, seed=0) == fold).all()


def test_fit_softmax_learns_a_separable_set():
    rng = np.random.default_rng(0)
    centres = np.eye(4) * 5
    y = np.repeat(np.arange(4), 30)
    x = centres[y] + rng.normal(scale=0.5, size=(120, 4)) + 3.0  # an offset: standardisation
    model = lab.fit_softmax(x, y, l2=0.01)
    probs = model.probabilities(x)
    assert (probs.argmax(axis=1) == y).all()
    assert probs.sum(axis=1) == pytest.approx(np.ones(120))
    assert probs[np.arange(120), y].min() > 0.9


def test_fit_softmax_class_weights_move_the_boundary():
    x = np.array([[0.0], [0.1], [0.2], [0.3], [1.0]])
    y = np.array([1, 1, 1, 1, 0])
    plain = lab.fit_softmax(x, y, l2=0.01).probabilities(np.array([[0.6]]))[0]
    weighted = lab.fit_softmax(x, y, l2=0.01, sample_weight=lab.class_weights(y)).probabilities(
        np.array([[0.6]]))[0]
    assert weighted[0] > plain[0]


# -- the artifact -------------------------------------------------------------------------------
def _artifact(tmp_path: Path, emb: FakeEmbedder, **manifest_changes) -> Path:
    d = head.feature_dim(emb.dim)
    rng = np.random.default_rng(1)
    model = head.SoftmaxModel(mean=np.zeros(d, np.float32), scale=np.ones(d, np.float32),
                              weights=rng.normal(size=(d, 4)).astype(np.float32),
                              bias=np.zeros(4, np.float32))
    report = {"encoder": {"name": emb.name, "dim": emb.dim}, "feature_version": head.FEATURE_VERSION,
              "labels": list(LABELS), "cv": {"conditions": {}}, **manifest_changes}
    lab.write_artifact(model, report, tmp_path)
    return tmp_path


def test_artifact_round_trip(tmp_path):
    emb = FakeEmbedder()
    out = _artifact(tmp_path, emb)
    assert sorted(p.name for p in out.iterdir()) == sorted([head.ARTIFACT, head.MANIFEST])
    loaded = head.VerdictHead.load(out, emb)
    again = head.VerdictHead.load(out / head.ARTIFACT, emb)  # the .npz path works as well
    scores = loaded.label_scores("The moon is made of cheese", [qa("Is it?", "No.")])
    assert list(scores) == list(LABELS)
    assert sum(scores.values()) == pytest.approx(1.0, abs=1e-3)
    assert again.label_scores("The moon is made of cheese", [qa("Is it?", "No.")]) == scores
    assert sum(loaded.label_scores("no evidence at all", []).values()) == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize("embedder, changes, words", [
    (FakeEmbedder(name="other/encoder"), {}, "other/encoder"),
    (FakeEmbedder(dim=16), {}, "16-d"),
    (FakeEmbedder(), {"feature_version": "qa-pool-v0"}, "qa-pool-v0"),
    (FakeEmbedder(), {"labels": ["Supported", "Refuted"]}, "labels"),
])
def test_load_refuses_a_mismatch(tmp_path, embedder, changes, words):
    out = _artifact(tmp_path, FakeEmbedder(), **changes)
    with pytest.raises(ModelMismatch, match=words) as err:
        head.VerdictHead.load(out, embedder)
    assert "factsieve train-verdict" in err.value.detail


def test_load_without_an_artifact_names_the_command(tmp_path):
    with pytest.raises(ModelUnavailable, match="factsieve train-verdict"):
        head.VerdictHead.load(tmp_path / "nothing-here", FakeEmbedder())


# -- training end to end ------------------------------------------------------------------------
def _write(folder: Path, rows: list[dict]) -> Path:
    folder.mkdir(parents=True)
    (folder / "claims.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


def _tiny_datasets(tmp_path: Path) -> dict[str, Path]:
    """Claims whose answers say yes (Supported), no (Refuted), nothing (NEE) or both
    (Conflicting): learnable through the answer cues alone."""
    answers = {"Supported": ["Yes."], "Refuted": ["No."], "Not Enough Evidence": [NO_ANSWER],
               "Conflicting Evidence/Cherrypicking": ["Yes.", "No."]}
    av = [{"id": f"dev-{i}", "claim": f"claim {i}", "label": label,
           "questions": [{"question": f"question {i}", "answers": [{"answer": a}]} for a in answers[label]]}
          for i, label in enumerate(LABELS * 15)]
    av[0]["questions"] = [{"question": "unanswered", "answers": []}]
    av[0]["label"] = "Not Enough Evidence"
    cf = [{"id": str(i), "claim": f"climate {i}", "label": label,
           "evidences": [{"article": "Title", "evidence": f"sentence {i}"}]}
          for i, label in enumerate(["SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO", "DISPUTED"])]
    liar = [{"id": str(i), "claim": f"said {i}", "label": label, "justification": j}
            for i, (label, j) in enumerate([("true", "Yes"), ("pants-fire", "No"), ("half-true", ""),
                                             ("barely-true", "Not so")])]
    ref = tmp_path / "averitec" / "reference"
    ref.mkdir(parents=True)
    (ref / "sys_predictions.jsonl").write_text("".join(json.dumps(
        {"id": r["id"], "pred_label": "Refuted", "evidence": [{"question": "q", "answer": "No."}]}) + "\n"
        for r in av), encoding="utf-8")
    return {"averitec": _write(tmp_path / "averitec_dir", av),
            "climate_fever": _write(tmp_path / "cf", cf), "liar_plus": _write(tmp_path / "liar", liar)}


def test_train_verdict_end_to_end(tmp_path):
    datasets = _tiny_datasets(tmp_path)
    emb = FakeEmbedder()
    report = lab.train_verdict(emb, datasets, out=tmp_path / "model", folds=3, repeats=2, l2=0.01,
                               reference=tmp_path / "averitec" / "reference")
    assert report["data"]["liar_plus"]["claims"] == 3  # the empty justification is skipped
    assert report["data"]["climate_fever"]["labels"] == {label: 1 for label in LABELS}
    assert list(report["cv"]["conditions"]) == ["averitec", "averitec+climate_fever",
                                                "averitec+liar_plus",
                                                "averitec+climate_fever+liar_plus"]
    alone = report["cv"]["conditions"]["averitec"]
    assert alone["macro_f1"]["mean"] > 0.8
    assert report["cv"]["majority_baseline"] == {
        "label": "Not Enough Evidence", "accuracy": pytest.approx(16 / 60, abs=1e-4),
        "macro_f1": pytest.approx(0.1053, abs=1e-4)}
    blend = report["reference_evidence"]["sys"]
    assert blend["w=0.0"]["accuracy"] == pytest.approx(15 / 60)  # the system alone: always Refuted
    manifest = json.loads((tmp_path / "model" / head.MANIFEST).read_text())
    assert manifest["trained_on"] == "averitec+climate_fever+liar_plus"
    loaded = head.VerdictHead.load(tmp_path / "model", emb)
    assert max(loaded.label_scores("claim x", [qa("q", "Yes.")]).items(), key=lambda kv: kv[1])[0] == "Supported"


def test_train_verdict_needs_averitec(tmp_path):
    datasets = _tiny_datasets(tmp_path)
    with pytest.raises(BadInput, match="--averitec"):
        lab.train_verdict(FakeEmbedder(), {"liar_plus": datasets["liar_plus"]}, out=tmp_path / "m")
    with pytest.raises(BadInput, match="unknown dataset"):
        lab.train_verdict(FakeEmbedder(), {**datasets, "fever": tmp_path}, out=tmp_path / "m")


def test_unmappable_label_is_refused(tmp_path):
    folder = _write(tmp_path / "liar", [{"id": "1", "claim": "c", "label": "mostly-false",
                                          "justification": "j"}])
    with pytest.raises(BadInput, match="mostly-false"):
        lab.load_liar_plus(folder)


# -- the command's dataset choice -----------------------------------------------------------------
def _args(**kw) -> argparse.Namespace:
    return argparse.Namespace(**{"averitec": None, "climate_fever": None, "liar_plus": None,
                                 "without": None, **kw})


def test_cli_datasets(tmp_path, monkeypatch):
    from cli import verdict as cli_verdict

    monkeypatch.setattr(cli_verdict, "DATASETS", {
        "averitec": ("--averitec", tmp_path / "absent"), "climate_fever": ("--climate-fever", tmp_path),
        "liar_plus": ("--liar-plus", tmp_path / "absent")})
    notes: list[str] = []
    got = cli_verdict.chosen_datasets(_args(averitec=tmp_path), notes.append)
    assert got == {"averitec": tmp_path, "climate_fever": tmp_path}
    assert len(notes) == 1 and "liar_plus skipped" in notes[0]
    assert cli_verdict.chosen_datasets(_args(averitec=tmp_path, without=["climate_fever"]),
                                       notes.append) == {"averitec": tmp_path}
    with pytest.raises(BadInput, match="--liar-plus"):
        cli_verdict.chosen_datasets(_args(liar_plus=tmp_path / "nope"), notes.append)
    with pytest.raises(BadInput, match="no training data"):
        cli_verdict.chosen_datasets(_args(without=["climate_fever"]), notes.append)


# -- the committed artifact -------------------------------------------------------------------------
@pytest.mark.model
def test_packaged_head_rates_a_claim(embedder):
    loaded = head.VerdictHead.load(None, embedder)
    assert loaded.manifest["encoder"] == {"name": embedder.name, "dim": embedder.dim}
    pairs = [{"question": "Did the WHO declare a pandemic in March 2020?",
              "answer": "Yes. The WHO declared COVID-19 a pandemic on 11 March 2020."}]
    scores = loaded.label_scores("The WHO declared COVID-19 a pandemic in March 2020.", pairs)
    assert list(scores) == list(LABELS)
    assert all(0.0 <= v <= 1.0 for v in scores.values())
    assert sum(scores.values()) == pytest.approx(1.0, abs=1e-3)
