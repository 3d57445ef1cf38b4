"""Cross-encoder reranking without torch: the classifier graph against numpy, OnnxCrossEncoder
(ordering, batching, truncation, empty input) and model resolution. The tiny model is random:
its scores mean nothing, only that every path computes the same thing."""
from __future__ import annotations

import json
import logging
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from plugin.errors import ModelUnavailable
from plugin.search.rerank import (
    RERANKER_MANIFEST,
    OnnxCrossEncoder,
    SentenceTransformersCrossEncoder,
    load_reranker,
    load_rerankers,
    resolve_reranker_path,
    unavailable_reranker,
)
from plugin.search.retrieval import retrieval_config
from plugin.settings import Settings
from tests.tiny_cross_encoder import TINY_CE, numpy_logit, random_cross_encoder, write_tiny_cross_encoder

import onnx  # noqa: E402 - the dev extra: missing, the test fails rather than skips
import onnxruntime as ort  # noqa: E402

QUERY = "w1 w2 w3"
PASSAGES = ["w4 w5", "w6", "w7 w8 w9 w10 w11 w12", "w13 w14 w15", "w1 w2", "w16 w17 w18 w19", "w20"]


@pytest.fixture(scope="module")
def ce_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-ce"))


def _ce(folder: Path, **kw) -> OnnxCrossEncoder:
    return OnnxCrossEncoder(folder, threads=1, **kw)


def _settings(tmp_path: Path) -> Settings:
    return Settings(cache_dir=tmp_path / "cache")


# -- the graph ------------------------------------------------------------------------------------
@pytest.mark.parametrize("level", ["ORT_DISABLE_ALL", "ORT_ENABLE_ALL"])
def test_classifier_graph_matches_numpy_reference(level: str) -> None:
    from plugin.build import bert_classifier_onnx_model

    weights = random_cross_encoder(TINY_CE, seed=3)
    model = bert_classifier_onnx_model(weights, TINY_CE)
    onnx.checker.check_model(model, full_check=True)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    batch = [[0, 7, 12, 2, 2, 55, 2], [0, 99, 2, 2, 5, 2], [0, *range(10, 30), 2], [0, 2, 2, 2]]
    width = max(map(len, batch))
    ids = np.full((len(batch), width), TINY_CE.pad_id, np.int64)
    mask = np.zeros_like(ids)
    for r, seq in enumerate(batch):
        ids[r, :len(seq)], mask[r, :len(seq)] = seq, 1
    (logits,) = sess.run(["logits"], {"input_ids": ids, "attention_mask": mask})
    assert logits.shape == (len(batch), 1) and logits.dtype == np.float32
    expected = [numpy_logit(weights, TINY_CE, seq) for seq in batch]
    np.testing.assert_allclose(logits[:, 0], expected, rtol=1e-4, atol=1e-4)
    assert len(set(np.round(logits[:, 0], 4))) == len(batch)  # every layer mattered


def test_classifier_graph_accepts_bertmodel_names() -> None:
    from plugin.build import bert_classifier_onnx_model

    prefixed = random_cross_encoder(TINY_CE, seed=4)
    plain = {k.removeprefix("bert."): v for k, v in prefixed.items()}
    a = bert_classifier_onnx_model(prefixed, TINY_CE).SerializeToString()
    b = bert_classifier_onnx_model(plain, TINY_CE).SerializeToString()
    assert a == b


# -- OnnxCrossEncoder -----------------------------------------------------------------------------
def test_scores_are_sigmoid_of_the_reference_logits(ce_dir: Path) -> None:
    ce = _ce(ce_dir)
    from tests.tiny_cross_encoder import word_tokenizer

    tok = word_tokenizer()
    weights = random_cross_encoder(TINY_CE, seed=0)
    expected = [numpy_logit(weights, TINY_CE, tok.encode(QUERY, p).ids) for p in PASSAGES]
    np.testing.assert_allclose(ce.logits(QUERY, PASSAGES), expected, rtol=1e-4, atol=1e-4)
    scores = ce.score(QUERY, PASSAGES)
    assert all(isinstance(s, float) and 0 < s < 1 for s in scores)
    np.testing.assert_allclose(scores, 1 / (1 + np.exp(-np.asarray(expected))), atol=1e-5)
    raw = _ce(ce_dir, activation="none").score(QUERY, PASSAGES)
    np.testing.assert_allclose(raw, expected, rtol=1e-4, atol=1e-4)


def test_pairs_use_the_xlmr_template(ce_dir: Path) -> None:
    ce = _ce(ce_dir)
    enc = ce._tok.encode("w1 w2", "w3")
    assert enc.tokens == ["<s>", "w1", "w2", "</s>", "</s>", "w3", "</s>"]


def test_batches_come_back_in_input_order(ce_dir: Path) -> None:
    batched = _ce(ce_dir, batch_size=2).score(QUERY, PASSAGES)
    one_by_one = [_ce(ce_dir).score(QUERY, [p])[0] for p in PASSAGES]
    np.testing.assert_allclose(batched, one_by_one, atol=1e-6)
    reversed_ = _ce(ce_dir, batch_size=3).score(QUERY, PASSAGES[::-1])
    np.testing.assert_allclose(reversed_[::-1], batched, atol=1e-6)
    assert len(set(np.round(batched, 6))) > 1


def test_empty_and_invalid_input(ce_dir: Path) -> None:
    ce = _ce(ce_dir)
    assert ce.score(QUERY, []) == []
    assert ce.logits(QUERY, ()).shape == (0,)
    with pytest.raises(TypeError):
        ce.score(QUERY, "w1 w2")  # a bare str is not a list of passages
    with pytest.raises(TypeError):
        ce.score(None, ["w1"])  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        _ce(ce_dir, activation="softmax")


def test_truncation_is_longest_first(ce_dir: Path) -> None:
    ce = _ce(ce_dir, max_seq_length=12)  # 4 specials + 8 tokens of text
    long = " ".join(f"w{i}" for i in range(20, 60))
    enc = ce._tok.encode(QUERY, long)
    assert len(enc.ids) == 12
    # the short query keeps its 3 tokens; the long passage gives up the rest
    assert ce.score(QUERY, [long]) == pytest.approx(ce.score(QUERY, ["w20 w21 w22 w23 w24"]), abs=1e-6)
    long_query = " ".join(f"w{i}" for i in range(60, 90))
    assert len(ce._tok.encode(long_query, "w1").ids) == 12


def test_sequences_are_capped_at_the_position_table(ce_dir: Path) -> None:
    ce = _ce(ce_dir, max_seq_length=512)
    assert ce.max_seq_length == TINY_CE.max_positions
    scores = ce.score(" ".join(["w5"] * 80), [" ".join(["w6"] * 200), "w7"])
    assert len(scores) == 2 and all(np.isfinite(scores))


def test_int8_file_is_preferred_and_ranks_alike(ce_dir: Path, tmp_path: Path) -> None:
    import shutil

    from plugin.build.graph import quantize_int8

    folder = tmp_path / "ce"
    shutil.copytree(ce_dir, folder)
    quantize_int8(folder / "onnx" / "model.onnx", folder / "onnx" / "model_int8.onnx")
    int8 = _ce(folder)
    assert int8.model_path.name == "model_int8.onnx"
    fp32 = _ce(folder, model_file=folder / "onnx" / "model.onnx")
    a, b = np.array(int8.logits(QUERY, PASSAGES)), np.array(fp32.logits(QUERY, PASSAGES))
    assert np.corrcoef(a, b)[0, 1] > 0.9


def test_missing_files_raise_model_unavailable(tmp_path: Path, ce_dir: Path) -> None:
    with pytest.raises(ModelUnavailable, match="no ONNX cross-encoder"):
        OnnxCrossEncoder(tmp_path)
    (tmp_path / "onnx").mkdir()
    (tmp_path / "onnx" / "model.onnx").write_bytes((ce_dir / "onnx" / "model.onnx").read_bytes())
    with pytest.raises(ModelUnavailable, match="tokenizer.json"):
        OnnxCrossEncoder(tmp_path)


# -- SentenceTransformersCrossEncoder (a fake module: no torch here) -----------------------------
def test_sentence_transformers_missing_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(ModelUnavailable, match=r"pip install 'factsieve\[torch\]'"):
        SentenceTransformersCrossEncoder("BAAI/bge-reranker-v2-m3")


def _fake_sentence_transformers(monkeypatch: pytest.MonkeyPatch, fail: bool = False) -> list:
    calls: list = []

    class FakeCrossEncoder:
        def __init__(self, name, max_length=None, device=None):
            if fail:
                raise OSError(f"{name} is not a local folder and the hub is unreachable")
            calls.append(("init", name, max_length))

        def predict(self, pairs, batch_size=32, show_progress_bar=None):
            calls.append(("predict", list(pairs), batch_size))
            return np.array([len(p) / 100 for _, p in pairs], np.float32)

    monkeypatch.setitem(sys.modules, "sentence_transformers",
                        types.SimpleNamespace(CrossEncoder=FakeCrossEncoder))
    return calls


def test_sentence_transformers_scores_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake_sentence_transformers(monkeypatch)
    ce = SentenceTransformersCrossEncoder("some/reranker", batch_size=8)
    assert ce.name == "some/reranker"
    scores = ce.score("q", ["a", "bbbb"])
    assert scores == pytest.approx([0.01, 0.04]) and all(isinstance(s, float) for s in scores)
    assert calls[-1] == ("predict", [("q", "a"), ("q", "bbbb")], 8)
    assert ce.score("q", []) == []


def test_sentence_transformers_load_error_names_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_sentence_transformers(monkeypatch, fail=True)
    with pytest.raises(ModelUnavailable, match="some/reranker"):
        SentenceTransformersCrossEncoder("some/reranker")


# -- resolution and loading -----------------------------------------------------------------------
def _install(ce_dir: Path, dest: Path, manifest: dict | None = None) -> Path:
    import shutil

    shutil.copytree(ce_dir, dest)
    if manifest is not None:
        (dest / RERANKER_MANIFEST).write_text(json.dumps(manifest))
    return dest


def test_paths_resolve_against_the_model_cache(tmp_path: Path, ce_dir: Path) -> None:
    settings = _settings(tmp_path)
    folder = _install(ce_dir, settings.model_cache_dir / "rerankers" / "tiny")
    assert resolve_reranker_path(str(folder), settings) == folder
    assert resolve_reranker_path("rerankers/tiny", settings) == folder
    assert resolve_reranker_path("tiny", settings) == folder
    assert resolve_reranker_path("BAAI/bge-reranker-v2-m3", settings) is None


def test_load_reranker_onnx_folder_uses_manifest_length(tmp_path: Path, ce_dir: Path) -> None:
    settings = _settings(tmp_path)
    _install(ce_dir, settings.model_cache_dir / "rerankers" / "tiny", {"max_length": 16})
    ce = load_reranker("rerankers/tiny", settings)
    assert isinstance(ce, OnnxCrossEncoder)
    assert ce.name == "rerankers/tiny" and ce.max_seq_length == 16
    assert load_reranker("tiny", settings, max_seq_length=10).max_seq_length == 10


def test_load_reranker_hub_name_goes_to_sentence_transformers(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake_sentence_transformers(monkeypatch)
    ce = load_reranker("BAAI/bge-reranker-v2-m3", _settings(tmp_path))
    assert isinstance(ce, SentenceTransformersCrossEncoder)
    assert calls[0][:2] == ("init", "BAAI/bge-reranker-v2-m3")


def _configs(models: dict[str, str | None]) -> dict:
    base = retrieval_config("hybrid-rrf")
    out = {}
    for name, model in models.items():
        body = base.model_dump()
        body["name"] = name
        body["rerank"] = None if model is None else {"model": model, "top": 20}
        out[name] = type(base).model_validate(body)
    return out


def test_load_rerankers_skips_unavailable_and_shares_instances(
        tmp_path: Path, ce_dir: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    monkeypatch.setattr("plugin.search.rerank._LOAD_ERRORS", {})
    settings = _settings(tmp_path)
    _install(ce_dir, settings.model_cache_dir / "rerankers" / "tiny")
    configs = _configs({"plain": None, "a": "rerankers/tiny", "b": "rerankers/tiny",
                        "hub": "BAAI/bge-reranker-v2-m3"})
    with caplog.at_level(logging.WARNING, logger="plugin.search.rerank"):
        got = load_rerankers(configs, settings)
    assert set(got) == {"a", "b"} and got["a"] is got["b"]
    assert isinstance(got["a"], OnnxCrossEncoder)
    assert any("'hub'" in r.getMessage() and "factsieve[torch]" in r.getMessage() for r in caplog.records)
    # the skipped one's error is kept for the matcher's note, the loaded ones have none
    failed = unavailable_reranker(configs["hub"])
    assert failed is not None and failed.name == "BAAI/bge-reranker-v2-m3" and "factsieve[torch]" in failed.reason
    assert unavailable_reranker(configs["a"]) is None and unavailable_reranker(configs["plain"]) is None
    assert load_rerankers(_configs({"plain": None}), settings) == {}


def test_import_is_cheap() -> None:
    code = ("import sys, plugin.search.rerank; "
            "heavy = {'torch', 'transformers', 'sentence_transformers', 'onnxruntime', 'tokenizers'}; "
            "print(sorted(heavy & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
