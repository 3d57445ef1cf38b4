"""Fixtures shared by the embedding tests."""
from __future__ import annotations

from pathlib import Path

import pytest

from tiny_bert import write_tiny_folder


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a tiny random BERT as ``onnx/model.onnx`` and a word-level tokenizer."""
    return write_tiny_folder(tmp_path_factory.mktemp("tiny-bert"))
