"""The distilled reranker student (``train-reranker distil``), on tiny random BERTs: the loss, the
graph ``model build`` writes for an adapter with a ``depth``, the manifest round trip, the command's
argument errors, and the command end to end (teacher built, student trained, built and served)."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from plugin.embedding.adapter import load_adapter, save_adapter
from plugin.errors import BadInput, ModelUnavailable
from plugin.settings import Settings
from tests.unit.embedding.test_query_tower import _base_folder, _deltas
from tests.unit.embedding.tiny_bert import TINY, random_bert
from tests.unit.search.test_lora_reranker import _head

TINY3 = dataclasses.replace(TINY, layers=3)


# -- the loss ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("student", "teacher", "kl", "mse", "want"), [
    ([[1.0, 2.0, 3.0]], [[1.0, 2.0, 3.0]], 1.0, 0.1, 0.0),          # equal logits: nothing to learn
    ([[5.0, 5.0]], [[5.0, 5.0]], 0.0, 1.0, 0.0),
    ([[2.0, 3.0, 4.0]], [[1.0, 2.0, 3.0]], 1.0, 0.0, 0.0),          # KL ignores a common offset...
    ([[2.0, 3.0, 4.0]], [[1.0, 2.0, 3.0]], 0.0, 1.0, 1.0),          # ...the squared error does not
    ([[0.0, 0.0]], [[np.log(3.0), 0.0]], 1.0, 0.0,                   # KL([3/4, 1/4] || [1/2, 1/2])
     0.75 * np.log(1.5) + 0.25 * np.log(0.5)),
    ([[0.0, 0.0], [1.0, 1.0]], [[0.0, 0.0], [1.0, 3.0]], 0.0, 0.5, 0.5 * 4 / 4),  # mean over every pair
])
def test_distil_loss_table(student, teacher, kl, mse, want):
    from plugin.lab.reranker.distil import distil_loss

    got = distil_loss(np, np.array(student), np.array(teacher), kl_weight=kl, mse_weight=mse)
    assert np.isclose(got, want, atol=1e-9)


def test_distil_loss_prefers_the_teachers_order():
    from plugin.lab.reranker.distil import distil_loss

    teacher = np.array([[3.0, 1.0, -1.0, -2.0]])
    same_order = np.array([[2.0, 0.5, -0.5, -1.0]])
    reversed_order = same_order[:, ::-1]
    for kl, mse in ((1.0, 0.0), (0.0, 1.0), (1.0, 0.1)):
        loss = lambda s: distil_loss(np, s, teacher, kl_weight=kl, mse_weight=mse)  # noqa: E731
        assert loss(teacher) < loss(same_order) < loss(reversed_order)


def test_distil_loss_is_the_same_in_jax():
    import jax.numpy as jnp

    from plugin.lab.reranker.distil import distil_loss

    s, t = np.array([[0.3, -1.0, 2.0]]), np.array([[1.0, 0.0, -0.5]])
    assert np.isclose(float(distil_loss(jnp, jnp.asarray(s), jnp.asarray(t), kl_weight=1.0, mse_weight=0.1)),
                      distil_loss(np, s, t, kl_weight=1.0, mse_weight=0.1), atol=1e-5)


# -- the graph -------------------------------------------------------------------------------------
def test_a_depth_adapter_is_built_as_the_first_layers_of_the_base():
    """A 3-layer base, ``depth`` 2: the ONNX graph is the JAX scorer of the first 2 layers (the
    student as trained) and holds no weight of layer 2."""
    import jax
    import onnxruntime as ort

    from plugin.build.adapted import reranker_graph
    from plugin.lab.reranker.distil import DistilOptions

    w = {**random_bert(TINY3, seed=3), **_head()}
    model = reranker_graph({"pooling": "mean", "depth": 2})(w, TINY3)
    assert not any(i.name.startswith("l2_") for i in model.graph.initializer)
    assert any(i.name.startswith("l1_") for i in model.graph.initializer)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])

    from plugin.learn.train.lora import PairScorer

    scorer = PairScorer(jax, dataclasses.replace(TINY3, layers=2), w,
                        DistilOptions(depth=2, rank=2).scorer_options())
    params = {"lora": scorer.params["lora"], "head": _head()}  # zero B: the base's layers
    pairs = [[0, 5, 6, 2, 2, 7, 8, 2], [0, 9, 2, 2, 10, 2]]
    want = scorer.score(params, scorer.cache(pairs))
    full = ort.InferenceSession(reranker_graph({"pooling": "mean"})(w, TINY3).SerializeToString(),
                                providers=["CPUExecutionProvider"])
    for seq, logit in zip(pairs, want):
        ids = np.array([seq], np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        assert np.isclose(sess.run(["logits"], feed)[0][0, 0], logit, atol=2e-3)  # the cache is fp16
        assert not np.isclose(full.run(["logits"], feed)[0][0, 0], logit, atol=1e-2)  # 3 layers differ


@pytest.mark.parametrize("depth", [0, -1, "2", True, 2.0])
def test_a_depth_that_is_not_a_positive_int_is_refused(depth):
    from plugin.build.adapted import reranker_graph

    with pytest.raises(ModelUnavailable, match="depth"):
        reranker_graph({"name": "x", "depth": depth})


def test_a_depth_past_the_base_is_refused():
    from plugin.build.adapted import reranker_graph

    with pytest.raises(ModelUnavailable, match="the base has 3 layers"):
        reranker_graph({"name": "x", "depth": 4})(random_bert(TINY3), TINY3)


# -- the manifest and the options ------------------------------------------------------------------
def _tiny_setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Settings, Path]:
    """The tiny base, a committed-looking teacher for it (``tiny-rr``, rank 2), settings."""
    import plugin.search.lora_reranker as lr

    base = _base_folder(tmp_path)
    committed = tmp_path / "rerankers"
    save_adapter(committed, "tiny-rr", _deltas(), 2.0,
                 {"base_model": str(base), "kind": "cross-encoder-lora", "pooling": "mean",
                  "max_length": 16, "dataset_name": "d", "training_query_ids": ["q1", "q2"]},
                 whole=_head())
    monkeypatch.setattr(lr, "reranker_adapter_dir", lambda: committed)
    return Settings(embedding_model=str(base), cache_dir=tmp_path / "cache"), committed


def test_depth_and_teacher_survive_the_adapter_file_and_reach_the_built_folder(tmp_path, monkeypatch):
    from plugin.build.adapted import build_lora_reranker
    from plugin.search.rerank import read_manifest

    settings, committed = _tiny_setup(tmp_path, monkeypatch)
    save_adapter(committed, "tiny-student", {k.replace(".layer.1.", ".layer.0."): v for k, v in _deltas().items()}, 2.0,
                 {"base_model": settings.embedding_model, "kind": "cross-encoder-lora", "pooling": "mean",
                  "max_length": 16, "depth": 1, "teacher": "tiny-rr", "training_query_ids": ["q1"]},
                 whole=_head())
    adapter = load_adapter("tiny-student", committed)
    assert adapter.manifest["depth"] == 1 and adapter.manifest["teacher"] == "tiny-rr"
    student = read_manifest(build_lora_reranker(settings, "tiny-student"))
    teacher = read_manifest(build_lora_reranker(settings, "tiny-rr"))
    assert student["depth"] == 1 and student["teacher"] == "tiny-rr"
    assert "depth" not in teacher  # no depth: the base's full depth, as before


def test_options_are_checked_against_the_base():
    from plugin.lab.reranker.distil import DistilOptions

    assert DistilOptions(depth=4, layers=0).validated(12).adapted == 4
    assert DistilOptions(depth=4, layers=2).scorer_options().layers == 2
    assert DistilOptions(depth=1, layers=2).adapted == 1   # a student shallower than --layers: all of it
    for bad in (dict(depth=0), dict(depth=13), dict(layers=-1), dict(rank=0),
                dict(kl_weight=0.0, mse_weight=0.0), dict(mse_weight=-1.0), dict(negatives=0)):
        with pytest.raises(BadInput):
            DistilOptions(**bad).validated(12)


def test_the_teacher_key_changes_with_any_pair():
    from plugin.lab.reranker.distil import teacher_key
    from plugin.learn.train.groups import TrainingGroup

    g = [TrainingGroup("q1", "post", "pos", ("n1", "n2", "n3"))]
    key = teacher_key("sha", "model_int8.onnx", g, 128)
    assert key == teacher_key("sha", "model_int8.onnx", g, 128)
    assert key != teacher_key("sha", "model.onnx", g, 128)
    assert key != teacher_key("sha", "model_int8.onnx", g, 64)
    assert key != teacher_key("sha2", "model_int8.onnx", g, 128)
    assert key != teacher_key("sha", "model_int8.onnx", [dataclasses.replace(g[0], query="other")], 128)
    assert key != teacher_key("sha", "model_int8.onnx", [dataclasses.replace(g[0], negatives=("n1", "n2"))], 128)


def test_the_teachers_deltas_warm_the_student_only_at_the_same_rank():
    import jax.numpy as jnp

    from plugin.embedding.adapter import QueryAdapter
    from plugin.lab.reranker.distil import teacher_deltas, warm_from_teacher

    deltas = {**_deltas(), **{k.replace(".layer.1.", ".layer.0."): v for k, v in _deltas(seed=2).items()}}
    teacher = QueryAdapter("t", deltas, scale=4.0)
    bottom = teacher_deltas(teacher, range(1), rank=2, scale=2.0)
    assert sorted(bottom) == sorted(k for k in deltas if ".layer.0." in k)
    for k, (a, b) in bottom.items():   # scale 4 -> 2: B doubles, the product scale * B @ A is the teacher's
        assert np.allclose(a, deltas[k][0]) and np.allclose(b, 2 * deltas[k][1])
    assert teacher_deltas(teacher, range(2), rank=3, scale=2.0) == {}
    fresh = {k: (jnp.zeros_like(jnp.asarray(a)), jnp.zeros_like(jnp.asarray(b))) for k, (a, b) in deltas.items()}
    fresh["encoder.layer.1.output.dense.weight"] = (jnp.zeros((2, 64)), jnp.zeros((32, 2)))
    warmed, n = warm_from_teacher(jnp, bottom, fresh)
    assert n == 2 and all(np.allclose(warmed[k][1], bottom[k][1]) for k in bottom)
    assert not np.any(np.asarray(warmed["encoder.layer.1.output.dense.weight"][1]))


# -- the command -----------------------------------------------------------------------------------
def _env(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> None:
    monkeypatch.setenv("FACTSIEVE_ENV_FILE", "")
    monkeypatch.setenv("FACTSIEVE_EMBEDDING_MODEL", settings.embedding_model)
    monkeypatch.setenv("FACTSIEVE_CACHE_DIR", str(settings.cache_dir))


@pytest.mark.parametrize(("argv", "message"), [
    (["--groups", "G", "--depth", "2"], "--teacher"),                       # argparse: exit 2
    (["--groups", "G", "--teacher", "tiny-rr"], "--depth"),
    (["--groups", "G", "--teacher", "tiny-rr", "--depth", "two"], "invalid int"),
    (["--teacher", "tiny-rr", "--depth", "1"], "--dataset"),
    (["--groups", "{groups}", "--teacher", "tiny-rr", "--depth", "0"], "--depth"),   # BadInput: exit 2
    (["--groups", "{groups}", "--teacher", "tiny-rr", "--depth", "3"], "--depth must be in 1..2"),
    (["--groups", "{groups}", "--teacher", "tiny-rr", "--depth", "1", "--layers", "-1"], "--layers"),
    (["--groups", "{groups}", "--teacher", "tiny-rr", "--depth", "1", "--kl-weight", "0", "--mse-weight", "0"],
     "not both 0"),
    (["--groups", "{missing}", "--teacher", "tiny-rr", "--depth", "1"], "not found"),
])
def test_argument_errors_exit_2(argv, message, tmp_path, monkeypatch, capsys):
    from cli.main import main

    settings, _ = _tiny_setup(tmp_path, monkeypatch)
    _env(monkeypatch, settings)
    groups = _groups_file(tmp_path)
    argv = [a.format(groups=groups, missing=tmp_path / "missing.jsonl") for a in argv]
    try:
        code = main(["train-reranker", "distil", *argv])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    assert code == 2 and message in capsys.readouterr().err


def _groups_file(tmp_path: Path, n: int = 6, negatives: int = 4) -> Path:
    from plugin.lab.reranker.groups import save_groups
    from plugin.learn.train.groups import TrainingGroup

    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(90)]
    groups = [TrainingGroup(f"q{i}", " ".join(rng.choice(words, 3)), " ".join(rng.choice(words, 4)),
                            tuple(" ".join(rng.choice(words, 4)) for _ in range(negatives))) for i in range(n)]
    path = tmp_path / "groups.jsonl"
    save_groups(path, groups, {"dataset_name": "d", "split_rule": "queries with split == 'train'",
                               "first_stage": "factsieve",
                               "training_query_ids": [g.query_id for g in groups]})
    return path


def test_distil_end_to_end_trains_builds_and_serves_a_depth_1_student(tmp_path, monkeypatch, capsys):
    from cli.main import main
    from plugin.build.adapted import build_lora_reranker
    from plugin.search.rerank import OnnxCrossEncoder, read_manifest

    settings, _ = _tiny_setup(tmp_path, monkeypatch)
    _env(monkeypatch, settings)
    groups, out = _groups_file(tmp_path), tmp_path / "students"
    argv = ["train-reranker", "distil", "--groups", str(groups), "--teacher", "tiny-rr", "--depth", "1",
            "--negatives", "3", "--epochs", "2", "--rank", "2", "--max-length", "16",
            "--teacher-cache", str(tmp_path / "teacher")]
    assert main([*argv, "--holdout"]) == 0
    held = json.loads(capsys.readouterr().out)
    assert "path" not in held and not list(out.glob("*"))  # --holdout writes nothing
    assert len(list((tmp_path / "teacher").glob("factsieve-distil-teacher-*.npz"))) == 1

    assert main([*argv, "--out", str(out)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["name"] == "tiny-rr-distil1" and result["teacher"]["cached"] is True  # the rerun reads them
    assert result["warm_started_deltas"] == 0  # the teacher adapts layer 1 only, at another rank
    manifest = load_adapter("tiny-rr-distil1", out).manifest
    assert manifest["depth"] == 1 and manifest["teacher"] == "tiny-rr" and manifest["layers"] == [0]
    assert manifest["options"]["negatives"] == 3 and len(manifest["history"]) == 2
    assert manifest["training_query_ids"] == [f"q{i}" for i in range(6)] and "int8_check" in manifest
    assert all(".layer.0." in k for k in load_adapter("tiny-rr-distil1", out).deltas)

    folder = build_lora_reranker(settings, "tiny-rr-distil1", folder=out, dest=tmp_path / "built")
    assert read_manifest(folder)["depth"] == 1
    import onnx

    graph = onnx.load(str(folder / "onnx" / "model.onnx"))
    assert not any(i.name.startswith("l1_") for i in graph.graph.initializer)
    scores = OnnxCrossEncoder(folder, max_seq_length=16, activation="none").logits("w1 w2", ["w3 w4", "w5"])
    assert scores.shape == (2,) and np.isfinite(scores).all()
