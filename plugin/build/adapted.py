"""Tuned models built from committed adapters: the base encoder's weights with an adapter merged in,
written as ONNX graphs (fp32, and the int8 copy where it ranks like fp32) into the model cache.

``build_query_tower`` builds a query tower (``plugin.embedding.query_tower`` serves it),
``build_lora_reranker`` a cross-encoder (``plugin.search.rerank`` serves it); both go through
``build_adapted``, which reuses a folder whose manifest matches the adapter's digest (the same
``is_current`` check serving makes) and otherwise writes a new one under a lock and swaps it in.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import shutil
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from plugin.build.atomic import locked, write_atomically
from plugin.build.graph import BertShape, bert_classifier_onnx_model, bert_onnx_model, quantize_int8
from plugin.embedding.adapter import QueryAdapter, find_adapter
from plugin.embedding.query_tower import (TOWER_BUILDER_VERSION, TOWER_MANIFEST, adapter_digest,
                                          base_model_dir, check_base, is_current, tower_dir)
from plugin.errors import ModelUnavailable
from plugin.search.lora_reranker import (CARRIED, RERANKER_BUILDER_VERSION, RERANKER_MANIFEST,
                                         find_reranker_adapter, reranker_dir)

if TYPE_CHECKING:
    from plugin.settings import Settings

log = logging.getLogger(__name__)


def read_base_weights(folder: Path) -> tuple[object, dict[str, np.ndarray]]:
    """``(BertShape, weights)`` of a Hugging Face ``BertModel`` folder (config.json +
    model.safetensors), weight names without a ``bert.`` prefix."""
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

    digest = adapter_digest(adapter.name, adapter.folder)
    if not force and is_current(dest, digest, manifest_file, version):
        return dest
    base = base_model_dir(settings)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with locked(dest.parent / f".{dest.name}.lock"):
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


def build_lora_reranker(settings: Settings, name: str, *, force: bool = False,
                        folder: Path | None = None, dest: Path | None = None) -> Path:
    """Merge the reranker adapter ``name`` (committed, or from ``folder``: a fold adapter of
    ``train-reranker lora --fold``, a tenant's of ``learn reranker``) into the base encoder and
    write its ONNX cross-encoder folder into the model cache, or ``dest`` (idempotent). Returns
    the folder."""
    adapter = find_reranker_adapter(name, folder)
    check_base(adapter, settings, what="reranker",
               retrain="`factsieve train-reranker lora`, or name a Hugging Face cross-encoder")
    carried = {k: adapter.manifest[k] for k in CARRIED if k in adapter.manifest}
    return build_adapted(
        settings, adapter, dest or reranker_dir(settings, name),
        graph=reranker_graph(adapter.manifest),
        manifest_file=RERANKER_MANIFEST, manifest={"adapter": name, **carried},
        version=RERANKER_BUILDER_VERSION, force=force,
        # int8 only where training measured that it ranks like fp32 (``rerank.OnnxCrossEncoder``
        # prefers an int8 file when there is one)
        int8=bool(adapter.manifest.get("int8", False)))


def reranker_depth(manifest: Mapping[str, object]) -> int | None:
    """A reranker adapter's ``depth`` (a distilled student runs the encoder's first ``depth``
    layers only: ``train-reranker distil``), or None for the base's full depth."""
    depth = manifest.get("depth")
    if depth is None:
        return None
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ModelUnavailable(f"reranker adapter {manifest.get('name')!r}: depth {depth!r} is not a "
                               "positive number of layers")
    return depth


def reranker_graph(manifest: Mapping[str, object]) -> Callable[[dict[str, np.ndarray], Any], object]:
    """The ONNX graph a reranker adapter's merged weights are written as: the cross-encoder with
    the manifest's pooling, over the base's layers or its first ``depth`` (the only place that
    reads them: ``model build`` and training's int8 check both build through it)."""
    pooling = str(manifest.get("pooling", "mean"))
    depth = reranker_depth(manifest)

    def graph(weights: dict[str, np.ndarray], shape: Any) -> object:
        if depth is not None:
            if depth > shape.layers:
                raise ModelUnavailable(f"reranker adapter {manifest.get('name')!r}: depth {depth}, the "
                                       f"base has {shape.layers} layers")
            # the graph reads the weights of the layers its shape names: the first ``depth``
            shape = dataclasses.replace(shape, layers=depth)
        return bert_classifier_onnx_model(weights, shape, pooling=pooling)

    return graph


def build_verdict_model(settings: Settings, name: str, *, force: bool = False,
                        folder: Path | None = None, dest: Path | None = None,
                        int8: bool | None = None) -> Path:
    """Merge the verdict-model adapter ``name`` (committed under ``plugin/artefacts/verdict``,
    or from ``folder``) into the base encoder and write its four-label ONNX classifier folder
    into the model cache, or ``dest`` (idempotent; ``plugin.verify.verdict_model`` serves it).
    An int8 copy is written when the adapter's manifest says int8 labels like fp32 (``int8``
    overrides: training's own check builds both)."""
    from plugin.embedding.adapter import load_adapter
    from plugin.verify import verdict_model as vm

    if folder is None and name not in vm.packaged_models():
        raise ModelUnavailable(f"no verdict model {name!r} in {vm.adapter_dir()} (known: "
                               f"{', '.join(vm.packaged_models()) or 'none'}): set FACTSIEVE_VERDICT_MODEL "
                               "to one of them or to head")
    adapter = load_adapter(name, folder or vm.adapter_dir())
    if adapter.manifest.get("kind") != vm.KIND:
        raise ModelUnavailable(f"{name!r} is not a verdict-model adapter (kind "
                               f"{adapter.manifest.get('kind')!r}, expected {vm.KIND!r})")
    check_base(adapter, settings, what="verdict model",
               retrain="`factsieve train-verdict --kind cross-encoder`")
    labels = list(adapter.manifest.get("labels") or [])
    carried = {k: adapter.manifest[k] for k in vm.CARRIED if k in adapter.manifest}
    return build_adapted(
        settings, adapter, dest or vm.built_dir(settings, name),
        graph=lambda weights, shape: bert_classifier_onnx_model(weights, shape, num_labels=len(labels),
                                                                pooling="mean"),
        manifest_file=vm.MANIFEST, manifest={"adapter": name, **carried},
        version=vm.BUILDER_VERSION, force=force,
        int8=bool(adapter.manifest.get("int8", False)) if int8 is None else int8)
