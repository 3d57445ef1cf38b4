"""Rerankers that ship as small committed adapters, built into ONNX cross-encoder folders.

``factsieve train-reranker lora`` trains a cross-encoder on CPU as LoRA deltas over the top
layers of the embedding model's encoder plus a small head (``plugin.lab.reranker.lora`` says how
and why), and writes them to ``plugin/search/rerankers/<name>.npz`` + ``.json`` — about a megabyte,
committed. ``factsieve model build`` (run by ``make demo``, ``make test`` and the Dockerfile)
merges each into the packaged encoder and writes ``<model cache>/rerankers/<name>/``: the
tokenizer, ``onnx/model.onnx`` (and an int8 copy when the adapter's manifest says int8 ranks
like fp32), and ``factsieve_reranker.json`` (what it was
trained on, so ``evaluate`` leaves those queries out). A configuration names it as
``rerankers/<name>`` and ``rerank.load_reranker`` serves it torch-free, like any trained folder.
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from plugin.embedding.adapter import QueryAdapter, load_adapter, packaged_adapters

if TYPE_CHECKING:
    from plugin.settings import Settings

#: The committed reranker adapters live here (package data).
RERANKER_PACKAGE_FOLDER = "rerankers"
#: Bump when a built folder's content would change for the same adapter.
RERANKER_BUILDER_VERSION = 1
#: Manifest keys carried from the adapter into the built folder's ``factsieve_reranker.json``.
CARRIED = ("kind", "int8", "languages", "dataset_name", "training_rule", "training_query_ids", "max_length", "pooling",
           "first_stage", "options", "history", "trained_on")


def reranker_adapter_dir() -> Path:
    return Path(str(resources.files("plugin.search").joinpath(RERANKER_PACKAGE_FOLDER)))


def packaged_rerankers() -> list[str]:
    """Names of the committed reranker adapters."""
    return packaged_adapters(reranker_adapter_dir())


def reranker_dir(settings: Settings, name: str) -> Path:
    from plugin.search.rerank import RERANKERS_DIR

    return settings.model_cache_dir / RERANKERS_DIR / name


def find_reranker_adapter(name: str, folder: Path | None = None) -> QueryAdapter:
    return load_adapter(name, folder or reranker_adapter_dir())


def build_lora_reranker(settings: Settings, name: str, *, force: bool = False,
                        folder: Path | None = None) -> Path:
    """Merge the reranker adapter ``name`` (committed, or from ``folder``: a fold adapter of
    ``train-reranker lora --fold``) into the base encoder and write its ONNX cross-encoder folder
    into the model cache (idempotent). Returns the folder."""
    from plugin.embedding.query_tower import build_adapted, check_base
    from plugin.lab.build_e5.graph import bert_classifier_onnx_model
    from plugin.search.rerank import RERANKER_MANIFEST

    adapter = find_reranker_adapter(name, folder)
    check_base(adapter, settings, what="reranker",
               retrain="`factsieve train-reranker lora`, or name a Hugging Face cross-encoder")
    pooling = str(adapter.manifest.get("pooling", "mean"))
    carried = {k: adapter.manifest[k] for k in CARRIED if k in adapter.manifest}
    return build_adapted(
        settings, adapter, reranker_dir(settings, name),
        graph=lambda weights, shape: bert_classifier_onnx_model(weights, shape, pooling=pooling),
        manifest_file=RERANKER_MANIFEST, manifest={"adapter": name, **carried},
        version=RERANKER_BUILDER_VERSION, force=force,
        # int8 only where training measured that it ranks like fp32 (``rerank.OnnxCrossEncoder``
        # prefers an int8 file when there is one)
        int8=bool(adapter.manifest.get("int8", False)))


def unbuilt_reranker(name_or_path: str, settings: Settings) -> str | None:
    """Why ``name_or_path`` (``rerankers/NAME`` or ``NAME``) cannot be served yet when it names a
    committed reranker adapter whose folder is missing or older than the adapter; else None."""
    from plugin.embedding.query_tower import adapter_digest, is_current
    from plugin.search.rerank import RERANKER_MANIFEST

    parts = Path(name_or_path).parts
    name = parts[-1] if parts and (len(parts) == 1 or parts[:-1] == ("rerankers",)) else None
    if name is None or name not in packaged_rerankers():
        return None
    digest = adapter_digest(name, reranker_adapter_dir())
    if is_current(reranker_dir(settings, name), digest, RERANKER_MANIFEST, RERANKER_BUILDER_VERSION):
        return None
    return (f"the reranker {name!r} is not built (or is older than its adapter) at "
            f"{reranker_dir(settings, name)}: run `factsieve model build`")
