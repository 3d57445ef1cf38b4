"""The tuned query tower: a copy of the base encoder with a query adapter merged in, built once into
the model cache (``plugin.build.adapted``, run by ``factsieve model build``), and the embedder that
sends posts through it and passages through the base.

``load_query_tower`` is what a ``Matcher`` calls for a configuration that names a
``query_encoder``; ``is_current`` says whether a built folder still matches its adapter. See
``plugin.embedding.adapter`` for why only the query side is tuned.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from plugin.embedding.adapter import QueryAdapter, find_adapter
from plugin.embedding.base import Embedder
from plugin.errors import ModelUnavailable

if TYPE_CHECKING:
    from plugin.settings import Settings

#: Written last into a built tower folder.
TOWER_MANIFEST = "factsieve_query_tower.json"
#: Bump when the built folder's content would change for the same adapter.
TOWER_BUILDER_VERSION = 1


def base_model_dir(settings: Settings) -> Path:
    """The local folder of the configured embedding model (the packaged test model's build
    folder, or a local folder named by ``FACTSIEVE_EMBEDDING_MODEL``)."""
    from plugin.embedding import rebuilt_model_dir
    from plugin.settings import TEST_MODEL

    if settings.embedding_model == TEST_MODEL:
        return rebuilt_model_dir(settings)
    return Path(settings.embedding_model).expanduser()


def tower_dir(settings: Settings, adapter: str) -> Path:
    return settings.model_cache_dir / "query-towers" / adapter


def adapter_digest(adapter: str, folder: Path | None = None) -> str:
    """What a built tower is current against: the adapter's deltas and its manifest (the served
    scale lives there)."""
    from plugin.embedding.adapter import adapter_dir

    d = adapter_dir(folder)
    h = hashlib.sha256((d / f"{adapter}.npz").read_bytes())
    h.update((d / f"{adapter}.json").read_bytes())
    return h.hexdigest()[:16]


def is_current(dest: Path, digest: str, manifest_file: str = TOWER_MANIFEST,
             version: int = TOWER_BUILDER_VERSION) -> bool:
    try:
        manifest = json.loads((dest / manifest_file).read_text())
    except (OSError, ValueError):
        return False
    return (isinstance(manifest, dict) and manifest.get("adapter_sha256") == digest
            and manifest.get("builder_version") == version)


def check_base(adapter: QueryAdapter, settings: Settings, *, what: str = "query adapter",
               retrain: str = "`factsieve train-query-encoder`") -> None:
    """An adapter only means something on the weights it was trained on."""
    if adapter.base_model and adapter.base_model != settings.embedding_model:
        raise ModelUnavailable(
            f"{what} {adapter.name!r} was trained on {adapter.base_model}, but this "
            f"deployment embeds with {settings.embedding_model}: train one for it with {retrain}")


class QueryTowerEmbedder:
    """Posts through the tuned query tower, fact-checks and evidence through the base encoder.

    Its ``name`` and ``dim`` are the base's: the index was built with the base, and the model check
    an index makes must keep passing (the passage side has not changed)."""

    def __init__(self, base: Embedder, tower: Embedder, adapter: str) -> None:
        self.base = base
        self.tower = tower
        self.adapter = adapter
        self.name = base.name
        self.dim = base.dim

    def encode_queries(self, texts):  # type: ignore[no-untyped-def]
        return self.tower.encode_queries(texts)

    def encode_passages(self, texts):  # type: ignore[no-untyped-def]
        return self.base.encode_passages(texts)


def load_query_tower(settings: Settings, name: str, base: Embedder) -> QueryTowerEmbedder:
    """The embedder for a configuration whose ``query_encoder`` is ``name``, or a
    ``ModelUnavailable`` that says how to get it (``factsieve model build``)."""
    from plugin.embedding.onnx_backend import OnnxEmbedder

    adapter = find_adapter(name, settings.query_adapter_dir)
    check_base(adapter, settings)
    if adapter.base_model and base.name != adapter.base_model:
        raise ModelUnavailable(f"query adapter {name!r} tunes {adapter.base_model}, but the "
                               f"index's encoder here is {base.name}")
    folder = tower_dir(settings, name)
    if not is_current(folder, adapter_digest(name, adapter.folder)):
        raise ModelUnavailable(f"the query tower {name!r} is not built (or is older than its "
                               f"adapter) at {folder}: run `factsieve model build`")
    model_file = None
    base_path = getattr(base, "model_path", None)
    if base_path is not None and (folder / "onnx" / Path(base_path).name).is_file():
        model_file = folder / "onnx" / Path(base_path).name  # the base's choice of fp32 / int8
    tower = OnnxEmbedder(folder, f"{base.name}+{name}", query_prefix=settings.query_prefix,
                         passage_prefix=settings.passage_prefix,
                         max_seq_length=settings.max_seq_length,
                         batch_size=settings.embedding_batch_size,
                         threads=settings.embedding_threads, model_file=model_file)
    return QueryTowerEmbedder(base, tower, name)
