"""load_embedder: which backend and folder a Settings object leads to."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from plugin.embedding import (OnnxEmbedder, SentenceTransformerEmbedder, load_embedder,
                              rebuilt_model_dir)
from plugin.errors import ModelUnavailable
from plugin.settings import TEST_MODEL, Settings


def _settings(tmp_path: Path, **kw) -> Settings:
    return Settings(cache_dir=tmp_path / "cache", **kw)


def test_import_is_cheap() -> None:
    code = ("import sys, plugin.embedding; heavy = {'onnxruntime', 'tokenizers', 'onnx', 'torch', "
            "'sentence_transformers'} & set(sys.modules); assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_test_model_not_built(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable, match="factsieve model build"):
        load_embedder(_settings(tmp_path))


def test_test_model_folder_uses_onnx(tmp_path: Path, tiny_model_dir: Path) -> None:
    settings = _settings(tmp_path, query_prefix="query: ", max_seq_length=64)
    shutil.copytree(tiny_model_dir, rebuilt_model_dir(settings))
    emb = load_embedder(settings)
    assert isinstance(emb, OnnxEmbedder)
    assert emb.name == TEST_MODEL and emb.query_prefix == "query: "
    assert emb.encode_queries(["w1"]).shape == (1, emb.dim)


def test_local_folder_auto_picks_onnx(tmp_path: Path, tiny_model_dir: Path) -> None:
    emb = load_embedder(_settings(tmp_path, embedding_model=str(tiny_model_dir),
                                  embedding_batch_size=7))
    assert isinstance(emb, OnnxEmbedder)
    assert emb.name == str(tiny_model_dir) and emb.batch_size == 7


def test_hub_name_without_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import now fails
    with pytest.raises(ModelUnavailable, match=r"pip install 'factsieve\[torch\]'"):
        load_embedder(_settings(tmp_path, embedding_model="intfloat/multilingual-e5-small"))


def test_forced_sentence_transformers_on_onnx_folder(tmp_path: Path, tiny_model_dir: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(ModelUnavailable, match="sentence-transformers"):
        load_embedder(_settings(tmp_path, embedding_model=str(tiny_model_dir),
                                embedding_backend="sentence-transformers"))


def test_sentence_transformers_load_error_names_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        def __init__(self, *a: object, **kw: object) -> None:
            raise OSError("offline, no cached files")

    fake = type(sys)("sentence_transformers")
    fake.SentenceTransformer = Broken  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", fake)
    with pytest.raises(ModelUnavailable, match="org/some-model"):
        SentenceTransformerEmbedder("org/some-model")


def test_onnx_backend_needs_a_folder(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable, match="local model folder"):
        load_embedder(_settings(tmp_path, embedding_model="org/some-model", embedding_backend="onnx"))


def test_unknown_backend(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable, match="unknown embedding backend"):
        load_embedder(_settings(tmp_path, embedding_backend="tensorflow"))
