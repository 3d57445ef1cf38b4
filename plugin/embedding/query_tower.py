"""The tuned query tower: a copy of the base encoder with a query adapter merged in, built once into
the model cache, and the embedder that sends posts through it and passages through the base.

``build_query_tower`` is what ``factsieve model build`` runs for every committed adapter (numpy and
onnx, no training framework); ``load_query_tower`` is what a ``Matcher`` calls for a configuration
that names a ``query_encoder``. See ``plugin.embedding.adapter`` for why only the query side is tuned.
"""
from __future__ import annotations

import hashlib
import json
import logging
import shutil
import time
from datetime import datetime, timezone
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from plugin.embedding.adapter import QueryAdapter, find_adapter
from plugin.embedding.base import Embedder
from plugin.errors import ModelUnavailable

if TYPE_CHECKING:
    from plugin.settings import Settings

log = logging.getLogger(__name__)

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


def read_base_weights(folder: Path) -> tuple[object, dict[str, np.ndarray]]:
    """``(BertShape, weights)`` of a Hugging Face ``BertModel`` folder (config.json +
    model.safetensors), weight names without a ``bert.`` prefix."""
    from plugin.lab.build_e5.graph import BertShape

    try:
        from safetensors.numpy import load_file
    except ImportError as exc:
        raise ModelUnavailable(f"building a query tower needs safetensors ({exc}): "
                               "pip install 'factsieve[testmodel]'") from exc
    cfg_path, st_path = folder / "config.json", folder / "model.safetensors"
    if not cfg_path.is_file() or not st_path.is_file():
        raise ModelUnavailable(f"{folder} has no config.json + model.safetensors: run "
                               "`factsieve model build` (or point FACTSIEVE_EMBEDDING_MODEL at a "
                               "BertModel folder)")
    cfg = json.loads(cfg_path.read_text())
    if cfg.get("model_type") not in (None, "bert"):
        raise ModelUnavailable(f"{folder} holds a {cfg.get('model_type')} model; query towers "
                               "are built for BERT encoders")
    shape = BertShape(hidden=cfg["hidden_size"], layers=cfg["num_hidden_layers"],
                      heads=cfg["num_attention_heads"], intermediate=cfg["intermediate_size"],
                      vocab=cfg["vocab_size"], max_positions=cfg["max_position_embeddings"],
                      type_vocab=cfg.get("type_vocab_size", 2), eps=cfg.get("layer_norm_eps", 1e-12),
                      pad_id=cfg.get("pad_token_id", 1))
    weights = {(k[len("bert."):] if k.startswith("bert.") else k): v
               for k, v in load_file(str(st_path)).items()}
    return shape, weights


def build_query_tower(settings: Settings, name: str, *, force: bool = False) -> Path:
    """Merge adapter ``name`` into the base model and write the tower's ONNX graphs (fp32 and the
    int8 copy the embedder prefers) into the model cache; idempotent: a folder built from the
    same adapter file is reused. Returns the folder."""
    from plugin.lab.build_e5.graph import bert_onnx_model

    adapter = find_adapter(name, settings.query_adapter_dir)
    check_base(adapter, settings)
    return build_adapted(settings, adapter, tower_dir(settings, name),
                         graph=bert_onnx_model, manifest_file=TOWER_MANIFEST,
                         manifest={"adapter": name}, version=TOWER_BUILDER_VERSION, force=force)


def build_adapted(settings: Settings, adapter: QueryAdapter, dest: Path, *,
                  graph: Callable[[dict[str, np.ndarray], object], object], manifest_file: str,
                  manifest: dict[str, object], version: int, force: bool = False,
                  int8: bool = True) -> Path:
    """The base model with ``adapter`` merged in, as ONNX graphs (``graph(weights, shape)``:
    fp32, and its int8 copy unless ``int8`` is false) beside the base's tokenizer in ``dest``, with ``manifest`` written
    last as ``manifest_file``. Idempotent: a folder built from the same adapter files by the same
    builder ``version`` is reused; built under a lock, swapped in whole."""
    import onnx

    from plugin.lab.build_e5.folder import _locked, write_atomically
    from plugin.lab.build_e5.graph import quantize_int8

    digest = adapter_digest(adapter.name, adapter.folder)
    if not force and is_current(dest, digest, manifest_file, version):
        return dest
    base = base_model_dir(settings)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with _locked(dest.parent / f".{dest.name}.lock"):
        if not force and is_current(dest, digest, manifest_file, version):
            return dest
        t0 = time.perf_counter()
        shape, weights = read_base_weights(base)
        merged = adapter.merged(weights)
        del weights

        def write(tmp: Path) -> None:
            (tmp / "onnx").mkdir()
            for f in ("config.json", "tokenizer.json", "tokenizer_config.json"):
                if (base / f).is_file():
                    shutil.copyfile(base / f, tmp / f)
            fp32 = tmp / "onnx" / "model.onnx"
            onnx.save_model(graph(merged, shape), str(fp32))  # type: ignore[arg-type]
            if int8:
                quantize_int8(fp32, tmp / "onnx" / "model_int8.onnx")
            (tmp / manifest_file).write_text(json.dumps({
                **manifest, "adapter_sha256": digest, "base_model": settings.embedding_model,
                "builder_version": version,
                "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds")},
                indent=2) + "\n")

        write_atomically(dest, write)
        log.info("built %s from adapter %s in %.1fs", dest, adapter.name, time.perf_counter() - t0)
    return dest


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
