"""The LoRA reranker trained from a pack on an accelerator box (``train-reranker lora-pack``,
``scripts/train_lora_remote.py``, ``lora-import``), on a tiny random BERT: the pruned vocabulary
scores exactly as the whole one, the pack round-trips, and the remote script trains a sweep with
nothing of our API stack importable."""
from __future__ import annotations

import json
from dataclasses import asdict
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from plugin.errors import BadInput
from plugin.lab.reranker.lora_pack import (WORD_EMBEDDINGS, flatten, prune_vocabulary, read_pack,
                                           save_pack, sweep_report)
from plugin.lab.query_tower import fold_of
from tests.conftest import ROOT
from tests.unit.embedding.tiny_bert import TINY, random_bert



def test_flatten_and_prune_renumber_the_pairs_into_the_rows_they_use():
    pairs = [[0, 7, 2], [0, 9, 7, 2], []]
    lengths, flat = flatten(pairs)
    assert lengths.tolist() == [3, 4, 0] and flat.tolist() == [0, 7, 2, 0, 9, 7, 2]
    table = np.arange(12, dtype=np.float32)[:, None] * np.ones((1, 3), np.float32)
    cut, remap = prune_vocabulary(pairs, table)
    assert cut[:, 0].tolist() == [0, 2, 7, 9]
    assert remap[[0, 7, 2, 9]].tolist() == [0, 2, 1, 3] and remap[5] == -1
    # a renumbered pair looks up the same rows in the cut matrix as the original in the whole one
    assert np.array_equal(cut[remap[[0, 9, 7, 2]]], table[[0, 9, 7, 2]])
    with pytest.raises(BadInput, match="past the model's vocabulary"):
        prune_vocabulary([[0, 12]], table)


def _pack(tmp_path: Path) -> tuple[Path, dict]:
    """A pack of the tiny BERT: 9 posts in 3 folds, each post's group (positive first, 3
    negatives) and its 4 first-stage candidates, the relevant one second."""
    qids = [str(i) for i in range(9)]
    groups = [[[0, 5 + i % 3, 2, 2, 20 + j + i % 4, 2] for j in range(4)] for i in range(len(qids))]
    cands = [[[0, 5 + i % 3, 2, 2, 30 + j, 2] for j in range(4)] for i in range(len(qids))]
    header = {"shape": asdict(TINY), "folds": 3, "max_length": 32, "negatives": 3,
              "group_query_ids": qids,
              "candidates": [{"query_id": q, "fold": fold_of(q, 3), "ids": [f"{q}-{j}" for j in range(4)]}
                             for q in qids],
              "qrels": {q: [f"{q}-1"] for q in qids}, "first_stage": {"config": "factsieve"},
              "manifest": {"base_model": "tiny", "kind": "cross-encoder-lora", "pooling": "mean",
                           "training_query_ids": qids}}
    path = tmp_path / "pack.npz"
    vocabulary = save_pack(path, header, random_bert(TINY), groups, cands)
    assert vocabulary == len({t for g in groups + cands for p in g for t in p})
    return path, {"groups": groups, "cands": cands}


def test_the_pack_round_trips_with_the_cut_vocabulary(tmp_path: Path):
    from dataclasses import asdict

    path, given = _pack(tmp_path)
    header, shape, weights, groups, cands = read_pack(path)
    assert asdict(shape) == asdict(TINY) and header["folds"] == 3
    assert [len(g) for g in groups] == [4] * 9 and [len(c) for c in cands] == [4] * 9
    whole = random_bert(TINY)
    # the pack's ids into its cut table embed exactly as the original ids into the whole table
    for mine, theirs in ((groups, given["groups"]), (cands, given["cands"])):
        for g, g0 in zip(mine, theirs):
            for p, p0 in zip(g, g0):
                assert np.allclose(weights[WORD_EMBEDDINGS][p], whole[WORD_EMBEDDINGS][p0], atol=1e-3)
    assert weights["encoder.layer.0.attention.self.query.weight"].dtype == np.float32
    np.savez(tmp_path / "other.npz", header=np.frombuffer(b'{"kind": "x"}', np.uint8))
    with pytest.raises(BadInput, match="not a LoRA reranker pack"):
        read_pack(tmp_path / "other.npz")


def test_the_remote_script_trains_a_sweep_without_our_api_stack(tmp_path: Path):
    """What the accelerator box runs, here on CPU with pydantic, OpenSearch's client and the
    tokenizers made unimportable: every entry's out-of-fold heads (each post scored by the
    reranker of its own fold) and its adapter come back, and ``lora-import``'s report reads them."""
    import jax  # noqa: F401 - the tune extra (make install): missing, this fails rather than skips
    path, _ = _pack(tmp_path)
    out = tmp_path / "out"
    sweep = [{"name": "a", "rank": 2, "layers": 1, "epochs": 2, "negatives": 3},
             {"name": "b", "rank": 2, "layers": 2, "epochs": 1, "negatives": 2}]
    blocked = ("import sys, runpy; "
               "[sys.modules.__setitem__(m, None) for m in ('pydantic', 'pydantic_settings', 'opensearchpy', "
               "'tokenizers', 'onnxruntime', 'flask')]; "
               f"sys.argv = ['train_lora_remote.py', '--pack', {str(path)!r}, '--out', {str(out)!r}, "
               f"'--platform', 'cpu', '--compile-cache', {str(tmp_path / 'cc')!r}, '--sweep', {json.dumps(sweep)!r}]; "
               f"runpy.run_path({str(ROOT / 'scripts' / 'train_lora_remote.py')!r}, run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert [e["name"] for e in json.loads(done.stdout)["entries"]] == ["a", "b"]
    summary = json.loads((out / "sweep.json").read_text())
    assert [len(e["folds"]) for e in summary["entries"]] == [4, 4]  # 3 folds + all groups
    assert summary["entries"][0]["folds"][-1] == {"fold": None, "groups": 9,
                                                  "history": summary["entries"][0]["folds"][-1]["history"]}
    heads = json.loads((out / "heads-a.json").read_text())
    assert sorted(h["query_id"] for h in heads) == [str(i) for i in range(9)]
    assert all(len(h["logits"]) == 4 and h["fold"] == fold_of(h["query_id"], 3) for h in heads)
    manifest = json.loads((out / "b.json").read_text())
    assert manifest["layers"] == [0, 1] and manifest["options"]["negatives"] == 2
    assert manifest["training_query_ids"] == [str(i) for i in range(9)] and manifest["rank"] == 2
    report = sweep_report(out, [0.0, 1.0])
    assert {r["name"] for r in report["entries"]} == {"a", "b"} and report["posts"] == 9
    assert all(set(r["grid"]) == {"0.0", "1.0"} for r in report["entries"])


def test_a_fixed_width_pads_every_batch_to_it():
    from plugin.learn.train.tower import Tower

    rows = [np.ones((5, 3), np.float32), np.ones((20, 3), np.float32)]
    assert Tower.pad(rows)[0].shape == (2, 32, 3)
    x, m = Tower.pad(rows, 128)
    assert x.shape == (2, 128, 3) and m.sum(1).tolist() == [5.0, 20.0]


def test_lora_import_reports_a_sweep_and_refuses_what_it_cannot_do(tmp_path: Path, capsys):
    """The CLI edge: the report from a sweep folder; a missing folder and an import without the
    groups its int8 check scores are clear errors with a non-zero exit."""
    from cli.main import main

    out = tmp_path / "sweep"
    out.mkdir()
    qids = [str(i) for i in range(6)]
    heads = [{"query_id": q, "fold": fold_of(q, 2), "ids": [f"{q}-0", f"{q}-1"], "logits": [0.0, 3.0]}
             for q in qids]
    (out / "heads-x.json").write_text(json.dumps(heads))
    (out / "sweep.json").write_text(json.dumps({
        "device": "cpu", "folds": 2, "qrels": {q: [f"{q}-1"] for q in qids},
        "entries": [{"name": "x", "options": {}, "seconds": 1.0}]}))
    assert main(["train-reranker", "lora-import", "--from", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    [entry] = report["entries"]
    # the reranker puts the relevant one first; a strong enough prior keeps the first stage's order
    assert entry["grid"]["0.0"] == 1.0 and entry["first_stage"]["MAP@5"] == 0.5
    assert main(["train-reranker", "lora-import", "--from", str(tmp_path / "nope")]) == 2
    assert "--from" in capsys.readouterr().err
    assert main(["train-reranker", "lora-import", "--from", str(out), "--name", "x"]) == 2
    assert "--groups" in capsys.readouterr().err
