"""Torch-free embedder: onnxruntime on CPU plus a Rust ``tokenizers`` tokenizer.

Expects a folder with ``tokenizer.json`` and ``onnx/model_int8.onnx`` or ``onnx/model.onnx`` whose
inputs are ``input_ids`` / ``attention_mask`` (int64, dynamic batch and sequence) and whose output
is the sentence embedding (``sentence_embedding``, as ``plugin.build`` writes). A graph that returns
token embeddings ``[batch, seq, hidden]`` instead (e.g. an ``optimum`` export) is mean-pooled here.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from plugin.embedding.base import check_texts
from plugin.errors import ModelUnavailable

log = logging.getLogger(__name__)

ONNX_FILES = ("onnx/model_int8.onnx", "onnx/model.onnx")
#: More intra-op threads than this stop paying off for a small encoder and starve other work.
MAX_DEFAULT_THREADS = 8


def find_onnx_model(folder: Path) -> Path | None:
    """The ONNX file ``OnnxEmbedder`` would load from ``folder``: int8 first, then fp32."""
    for rel in ONNX_FILES:
        if (folder / rel).is_file():
            return folder / rel
    return None


def default_threads() -> int:
    """CPUs this process may use (respects affinity / container cpusets), capped."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        n = os.cpu_count() or 1
    return max(1, min(n, MAX_DEFAULT_THREADS))


#: the sessions this process has open, by model file (its path, size and modification time) and
#: thread count: the one place a model's weights are loaded, shared by every embedder, reranker
#: and verdict head that opens the same file while one of them holds it (each ``Services`` opens
#: its own models; what one costs: docs/operating/sizing.md). A rewritten file is a new key.
_SESSIONS: weakref.WeakValueDictionary[tuple[Any, ...], Any] = weakref.WeakValueDictionary()
#: the tokenizers this process has open, by the file's content and the truncation length (the
#: embedder, the rerankers, the query towers and the verdict head usually share one XLM-R
#: vocabulary): shared while one caller holds it
_TOKENIZERS: weakref.WeakValueDictionary[tuple[Any, ...], Any] = weakref.WeakValueDictionary()
_DIGESTS: dict[tuple[str, int, int], str] = {}
_LOCK = threading.Lock()


def _shared(cache: weakref.WeakValueDictionary[tuple[Any, ...], Any], key: tuple[Any, ...],
            make: Callable[[], Any]) -> Any:
    """``cache[key]``, made by ``make`` when no caller holds one (under the lock: one load each)."""
    with _LOCK:
        found = cache.get(key)
        if found is None:
            found = make()
            cache[key] = found
        return found


def _stamp(path: Path) -> tuple[str, int, int]:
    """A file's resolved path, size and modification time (a rewritten file stamps anew)."""
    st = path.stat()
    return str(path.resolve()), st.st_size, st.st_mtime_ns


def open_session(model_path: Path, threads: int | None = None) -> tuple[Any, Any]:
    """A CPU onnxruntime session tuned for small interactive batches (all graph optimisations,
    sequential execution, one inter-op thread), checked to take ``input_ids`` and
    ``attention_mask``, and its options. Shared by the embedder, the cross-encoder and the
    verdict head, and by every caller that opens the same file (``_SESSIONS``: onnxruntime's
    ``run`` is safe from many threads)."""
    threads = threads or default_threads()
    try:
        stamp = _stamp(Path(model_path))
    except OSError as exc:
        raise ModelUnavailable(f"cannot load ONNX model {model_path}: {exc.strerror}") from None
    session = _shared(_SESSIONS, (*stamp, threads), lambda: _open_session(model_path, threads))
    return session, session.get_session_options()


def _open_session(model_path: Path, threads: int) -> Any:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    # Idle onnxruntime workers spin by default, burning the cores OpenSearch needs between our
    # calls on a small box; measured on the 2-core machine with the live pipeline (embed →
    # _msearch → fetch), no spinning cut factsieve's p50 from 97 to 80 ms under load.
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
    opts.log_severity_level = 3
    try:
        session = ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph types
        raise ModelUnavailable(f"cannot load ONNX model {model_path}: {exc}") from exc
    inputs = {i.name for i in session.get_inputs()}
    if not {"input_ids", "attention_mask"} <= inputs:
        raise ModelUnavailable(f"{model_path} must take input_ids and attention_mask, "
                               f"takes {sorted(inputs)}")
    return session


def open_tokenizer(folder: Path, max_seq_length: int) -> tuple[Any, int, int]:
    """The folder's ``tokenizer.json`` set to truncate at ``max_seq_length`` (capped at the
    model's position table: positions past it would crash the graph) and not to pad (we pad
    per batch ourselves, after sorting by length); pairs truncate longest-first, as Hugging Face
    tokenizers do. Returns it, the pad id and the length used."""
    from tokenizers import Tokenizer

    if not (folder / "tokenizer.json").is_file():
        raise ModelUnavailable(f"no tokenizer.json in {folder}")
    config = _read_json(folder / "config.json")
    max_positions = config.get("max_position_embeddings")
    max_len = min(max_seq_length, max_positions or max_seq_length)
    path = folder / "tokenizer.json"

    def read() -> Any:
        try:
            tok = Tokenizer.from_file(str(path))
        except Exception as exc:  # the Rust side raises plain Exception subclasses
            raise ModelUnavailable(f"cannot read {path}: {exc}") from exc
        tok.no_padding()
        tok.enable_truncation(max_length=max_len, strategy="longest_first")
        return tok

    tok = _shared(_TOKENIZERS, (_digest(path), max_len), read)
    return tok, _pad_id(tok, config), max_len


def _digest(path: Path) -> str:
    """The content digest of a tokenizer file, read once per ``_stamp``."""
    stamp = _stamp(path)
    if stamp not in _DIGESTS:
        _DIGESTS[stamp] = hashlib.sha256(path.read_bytes()).hexdigest()
    return _DIGESTS[stamp]


class OnnxEmbedder:
    """Embeds with an ONNX sentence-embedding graph.

    Inputs are tokenised in one batch call, sorted by length and cut into batches padded only to
    their own longest text (less wasted compute on padding), then put back in input order.
    """

    def __init__(self, folder: Path, name: str, *, query_prefix: str = "", passage_prefix: str = "",
                 max_seq_length: int = 512, batch_size: int = 32, threads: int | None = None,
                 model_file: Path | None = None) -> None:
        folder = Path(folder)
        model_path = Path(model_file) if model_file else find_onnx_model(folder)
        if model_path is None or not model_path.is_file():
            raise ModelUnavailable(f"no ONNX model ({' or '.join(ONNX_FILES)}) in {folder}")
        self.name = name
        self.model_path = model_path
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.batch_size = max(1, int(batch_size))

        self._tok, self.pad_id, self.max_seq_length = open_tokenizer(folder, max_seq_length)

        self._session, opts = open_session(model_path, threads)
        self._token_types = "token_type_ids" in {i.name for i in self._session.get_inputs()}
        outputs = self._session.get_outputs()
        chosen = next((o for o in outputs if o.name == "sentence_embedding"), outputs[0])
        self._output = [chosen.name]
        self._pool = len(chosen.shape) == 3
        last = chosen.shape[-1]
        self.dim = last if isinstance(last, int) else int(self._run([[self.pad_id]]).shape[1])
        log.info("loaded %s (%s, dim %d, %d threads)", name, model_path.name, self.dim,
                 opts.intra_op_num_threads)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.query_prefix)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.passage_prefix)

    def _encode(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self.dim), np.float32)
        if prefix:
            items = [prefix + t for t in items]
        if len(items) == 1:  # the latency path: no sorting, no padding
            return self._run([self._tok.encode(items[0]).ids])
        ids = [e.ids for e in self._tok.encode_batch(items)]
        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        order = np.argsort(-lengths, kind="stable")
        out = np.empty((len(ids), self.dim), np.float32)
        for start in range(0, len(ids), self.batch_size):
            idx = order[start:start + self.batch_size]
            out[idx] = self._run([ids[i] for i in idx])
        return out

    def _run(self, batch: list[list[int]]) -> np.ndarray:
        width = max(map(len, batch))
        input_ids = np.full((len(batch), width), self.pad_id, np.int64)
        mask = np.zeros((len(batch), width), np.int64)
        for row, seq in enumerate(batch):
            input_ids[row, :len(seq)] = seq
            mask[row, :len(seq)] = 1
        feed = {"input_ids": input_ids, "attention_mask": mask}
        if self._token_types:
            feed["token_type_ids"] = np.zeros_like(input_ids)
        vec = self._session.run(self._output, feed)[0]
        if self._pool:
            m = mask[:, :, None].astype(np.float32)
            vec = (vec * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        vec = np.asarray(vec, dtype=np.float32)
        # the graph normalises already; doing it again is cheap and covers third-party graphs
        return vec / np.maximum(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12)


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _pad_id(tok: object, config: dict) -> int:
    padding = tok.padding  # type: ignore[attr-defined]
    if padding and isinstance(padding.get("pad_id"), int):
        return int(padding["pad_id"])
    for token in ("<pad>", "[PAD]"):
        tid = tok.token_to_id(token)  # type: ignore[attr-defined]
        if tid is not None:
            return int(tid)
    pad = config.get("pad_token_id")
    return int(pad) if isinstance(pad, int) else 0
