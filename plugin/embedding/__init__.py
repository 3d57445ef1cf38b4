"""Text embeddings: the ``Embedder`` protocol, its two backends and ``load_embedder``.

Importing this package is cheap: onnxruntime, tokenizers, onnx and sentence-transformers are
imported only when a backend is built (or the test model is built).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from plugin.embedding.base import Embedder
from plugin.embedding.onnx_backend import OnnxEmbedder, find_onnx_model
from plugin.embedding.st_backend import SentenceTransformerEmbedder
from plugin.errors import ModelUnavailable
from plugin.settings import TEST_MODEL

if TYPE_CHECKING:
    from plugin.settings import Settings

__all__ = ["BACKENDS", "Embedder", "OnnxEmbedder", "SentenceTransformerEmbedder", "TEST_MODEL",
           "TEST_MODEL_DIRNAME", "load_embedder", "rebuilt_model_dir"]

BACKENDS = ("auto", "onnx", "sentence-transformers")
# The folder (under the model cache) where `factsieve model build` writes the packaged test model.
TEST_MODEL_DIRNAME = "multilingual-e5-small-rebuilt"


def rebuilt_model_dir(settings: Settings) -> Path:
    """Where ``factsieve model build`` puts (and ``load_embedder`` finds) the test model."""
    return settings.model_cache_dir / TEST_MODEL_DIRNAME


def load_embedder(settings: Settings) -> Embedder:
    """The embedder ``settings`` describe.

    ``embedding_model`` is ``TEST_MODEL`` (the folder ``factsieve model build`` wrote), a local
    folder, or a Hugging Face name (sentence-transformers). ``embedding_backend`` ``auto`` takes
    ONNX when the folder has an ONNX model, sentence-transformers otherwise.
    """
    backend = settings.embedding_backend
    if backend not in BACKENDS:
        raise ModelUnavailable(f"unknown embedding backend {backend!r}; "
                               f"use one of {', '.join(BACKENDS)}")
    model = settings.embedding_model
    folder: Path | None
    if model == TEST_MODEL:
        folder = rebuilt_model_dir(settings)
        if not folder.is_dir():
            raise ModelUnavailable(f"the test model {TEST_MODEL} is not built at {folder}: "
                                   "run `factsieve model build`")
    else:
        local = Path(model).expanduser()
        folder = local if local.is_dir() else None

    use_onnx = backend == "onnx" or (backend == "auto" and folder is not None
                                     and find_onnx_model(folder) is not None)
    common = dict(query_prefix=settings.query_prefix, passage_prefix=settings.passage_prefix,
                  max_seq_length=settings.max_seq_length, batch_size=settings.embedding_batch_size)
    if use_onnx:
        if folder is None:
            raise ModelUnavailable(f"the onnx backend needs a local model folder; "
                                   f"{model!r} is not one")
        model_file = None
        if settings.embedding_onnx_file:
            model_file = folder / settings.embedding_onnx_file
            if not model_file.is_file():
                raise ModelUnavailable(f"no ONNX graph {settings.embedding_onnx_file!r} in {folder} "
                                       "(FACTSIEVE_EMBEDDING_ONNX_FILE)")
        return OnnxEmbedder(folder, model, threads=settings.embedding_threads,
                            model_file=model_file, **common)
    return SentenceTransformerEmbedder(str(folder) if folder is not None else model, name=model,
                                       **common)
