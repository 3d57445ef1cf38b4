"""Rerankers that ship as small committed adapters, built into ONNX cross-encoder folders.

``factsieve train-reranker lora`` trains a cross-encoder on CPU as LoRA deltas over the top
layers of the embedding model's encoder plus a small head, and writes them to
``plugin/artefacts/rerankers/<name>.npz`` + ``.json`` — about a megabyte, committed.
``factsieve model build`` (``plugin.build``; run by ``make demo``, ``make test`` and the
Dockerfile) merges each into the packaged encoder and writes ``<model cache>/rerankers/<name>/``:
the tokenizer, ``onnx/model.onnx`` (and an int8 copy when the adapter's manifest says int8 ranks
like fp32), and ``factsieve_reranker.json`` (what it was trained on, so ``evaluate`` leaves those
queries out). A configuration names it as ``rerankers/<name>`` and ``rerank.load_reranker``
serves it torch-free, like any trained folder; ``unbuilt_reranker`` says when it is not built yet.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from plugin.artefacts import RERANKERS, artefact_dir
from plugin.embedding.adapter import QueryAdapter, load_adapter, packaged_adapters
from plugin.embedding.query_tower import adapter_digest, is_current

if TYPE_CHECKING:
    from plugin.settings import Settings

#: Written by ``factsieve train-reranker`` beside the model (base model, split, training ids…).
RERANKER_MANIFEST = "factsieve_reranker.json"
#: Where ``factsieve train-reranker --out NAME`` puts a model, under ``Settings.model_cache_dir``.
RERANKERS_DIR = "rerankers"
#: Bump when a built folder's content would change for the same adapter.
RERANKER_BUILDER_VERSION = 1
#: Manifest keys carried from the adapter into the built folder's ``factsieve_reranker.json``.
CARRIED = ("kind", "int8", "languages", "dataset_name", "training_rule", "training_query_ids", "max_length", "pooling",
           "first_stage", "options", "history", "trained_on", "depth", "teacher", "sources", "gate",
           "warm_start")


def reranker_adapter_dir() -> Path:
    return artefact_dir(RERANKERS)


def packaged_rerankers() -> list[str]:
    """Names of the committed reranker adapters."""
    return packaged_adapters(reranker_adapter_dir())


def reranker_dir(settings: Settings, name: str) -> Path:
    return settings.model_cache_dir / RERANKERS_DIR / name


def find_reranker_adapter(name: str, folder: Path | None = None) -> QueryAdapter:
    return load_adapter(name, folder or reranker_adapter_dir())


def unbuilt_reranker(name_or_path: str, settings: Settings) -> str | None:
    """Why ``name_or_path`` (``rerankers/NAME`` or ``NAME``) cannot be served yet when it names a
    committed reranker adapter whose folder is missing or older than the adapter; else None."""
    parts = Path(name_or_path).parts
    name = parts[-1] if parts and (len(parts) == 1 or parts[:-1] == ("rerankers",)) else None
    if name is None or name not in packaged_rerankers():
        return None
    digest = adapter_digest(name, reranker_adapter_dir())
    if is_current(reranker_dir(settings, name), digest, RERANKER_MANIFEST, RERANKER_BUILDER_VERSION):
        return None
    return (f"the reranker {name!r} is not built (or is older than its adapter) at "
            f"{reranker_dir(settings, name)}: run `factsieve model build`")
