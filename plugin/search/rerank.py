"""Cross-encoder reranking of the fused top candidates.

Production takes any sentence-transformers ``CrossEncoder`` by name (default
``BAAI/bge-reranker-v2-m3``); a folder written by ``factsieve train-reranker`` carries an ONNX
export and runs without torch (``OnnxCrossEncoder``). Both return ``sigmoid(logit)`` per
(query, passage) pair — what ``CrossEncoder.predict`` returns for a one-label model — so scores
lie in (0, 1) whichever backend produced them and a configuration's blend ``weight`` means the
same thing for both.

Whether a match is reranked, and how far, is ``RerankGate``'s decision; ``reorder`` then puts the
head in the cross-encoder's order (with the configuration's blend or rank prior).
"""
from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from plugin.embedding.onnx_backend import find_onnx_model, open_session, open_tokenizer
from plugin.errors import FactSieveError, ModelUnavailable
from plugin.models import Fused
from plugin.search.lora_reranker import RERANKER_MANIFEST, RERANKERS_DIR, unbuilt_reranker
from plugin.search.retrieval import Rerank, RetrievalConfig
from plugin.settings import Settings

log = logging.getLogger(__name__)

#: The production default named in the docs and the configuration examples.
DEFAULT_RERANKER = "BAAI/bge-reranker-v2-m3"
#: the manifest key of a reranker's measured language gate (``plugin.search.rerank_gate``)
GATE_KEY = "gate"
TORCH_HINT = "pip install 'factsieve[torch]'"


class Reranker(Protocol):
    """Scores (query, passage) pairs; higher is more relevant. A reranker may also carry
    ``languages`` (a set of codes): the languages it was trained on, outside which the match
    keeps the fused order (``outside_languages``)."""

    def score(self, query: str, passages: list[str]) -> list[float]: ...


@runtime_checkable
class CrossEncoder(Protocol):
    """What ``Matcher`` needs (the ``Reranker`` protocol) plus a name for reports."""

    name: str

    def score(self, query: str, passages: list[str]) -> list[float]: ...


def _check_pairs(query: str, passages: Sequence[str]) -> list[str]:
    if not isinstance(query, str):
        raise TypeError(f"query must be a str, got {type(query).__name__}")
    if isinstance(passages, str):  # a bare str is a sequence of characters: refuse it
        raise TypeError("expected a list of passages, got a single str")
    return list(passages)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # overflow-free logistic


class OnnxCrossEncoder:
    """Scores (query, passage) pairs with an ONNX sequence-classification graph, torch-free.

    The folder holds ``tokenizer.json`` and ``onnx/model_int8.onnx`` or ``onnx/model.onnx``, a
    graph taking ``input_ids`` / ``attention_mask`` (and ``token_type_ids`` if it wants them)
    and returning one logit per pair (``logits`` ``[batch, 1]``). Pairs are encoded by the
    tokenizer's own post-processor (``<s> q </s></s> p </s>`` for XLM-R, ``[CLS] q [SEP] p
    [SEP]`` with type ids for BERT) and truncated longest-first to ``max_seq_length``, as
    Hugging Face tokenizers do by default for pairs (so training and inference see the same
    tokens). As in ``OnnxEmbedder``, pairs are sorted by length and batched with padding to each
    batch's own longest pair, then put back in input order.
    """

    def __init__(self, folder: Path | str, *, name: str | None = None, max_seq_length: int = 256,
                 batch_size: int = 32, threads: int | None = None,
                 model_file: Path | str | None = None, activation: str = "sigmoid",
                 languages: Sequence[str] | None = None, gate: Mapping[str, Any] | None = None) -> None:
        folder = Path(folder)
        model_path = Path(model_file) if model_file else find_onnx_model(folder)
        if model_path is None or not model_path.is_file():
            raise ModelUnavailable(f"no ONNX cross-encoder (onnx/model_int8.onnx or onnx/model.onnx) "
                                   f"in {folder}")
        if activation not in ("sigmoid", "none"):
            raise ValueError(f"activation must be 'sigmoid' or 'none', got {activation!r}")

        self.name = name or str(folder)
        self.folder = folder
        #: the languages it was trained on (``None``: not known, so not restricted)
        self.languages = frozenset(languages) if languages else None
        #: its measured language gate (``GATE_KEY`` of its manifest; ``measured_gate``): where it
        #: beat the first stage out of fold. ``None``: ``languages`` decides
        self.gate = dict(gate) if gate else None
        self.model_path = model_path
        self.batch_size = max(1, int(batch_size))
        self.activation = activation
        self._tok, self.pad_id, self.max_seq_length = open_tokenizer(folder, max_seq_length)

        self._session, opts = open_session(model_path, threads)
        self._token_types = "token_type_ids" in {i.name for i in self._session.get_inputs()}
        outputs = self._session.get_outputs()
        self._output = [next((o for o in outputs if o.name == "logits"), outputs[0]).name]
        log.info("loaded cross-encoder %s (%s, max %d tokens, %d threads)", self.name,
                 model_path.name, self.max_seq_length, opts.intra_op_num_threads)
        # one pair through the graph now: ONNX Runtime's first run allocates and plans, and a live
        # matcher sizes its rerank budget from the first call's cost per pair (a cold first call
        # measured ~900 ms a pair, and the budget then fitted no pair at all)
        self.logits("warm-up", ["warm-up"])

    def logits(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """Raw logits, one per passage, in input order (float32)."""
        items = _check_pairs(query, passages)
        if not items:
            return np.zeros(0, np.float32)
        encs = self._tok.encode_batch([(query, p) for p in items])
        lengths = np.fromiter((len(e.ids) for e in encs), dtype=np.int64, count=len(encs))
        order = np.argsort(-lengths, kind="stable")
        out = np.empty(len(encs), np.float32)
        for start in range(0, len(encs), self.batch_size):
            idx = order[start:start + self.batch_size]
            out[idx] = self._run([encs[i] for i in idx])
        return out

    def score(self, query: str, passages: list[str]) -> list[float]:
        raw = self.logits(query, passages)
        return (_sigmoid(raw) if self.activation == "sigmoid" else raw.astype(np.float64)).tolist()

    def _run(self, batch: list[Any]) -> np.ndarray:
        width = max(len(e.ids) for e in batch)
        input_ids = np.full((len(batch), width), self.pad_id, np.int64)
        mask = np.zeros((len(batch), width), np.int64)
        types = np.zeros((len(batch), width), np.int64) if self._token_types else None
        for row, enc in enumerate(batch):
            n = len(enc.ids)
            input_ids[row, :n] = enc.ids
            mask[row, :n] = 1
            if types is not None:
                types[row, :n] = enc.type_ids
        feed = {"input_ids": input_ids, "attention_mask": mask}
        if types is not None:
            feed["token_type_ids"] = types
        logits = np.asarray(self._session.run(self._output, feed)[0], dtype=np.float32)
        return logits.reshape(len(batch), -1)[:, 0]


class SentenceTransformersCrossEncoder:
    """Any sentence-transformers ``CrossEncoder`` by name or folder (production path).

    sentence-transformers (and torch) are imported only here, so the API and the CLI start
    without them. ``predict`` applies the model's default activation (sigmoid for one label).
    """

    def __init__(self, name: str = DEFAULT_RERANKER, *, max_length: int | None = None,
                 batch_size: int = 32, device: str | None = None) -> None:
        try:
            from sentence_transformers import CrossEncoder as _CrossEncoder
        except ImportError as exc:
            raise ModelUnavailable(f"reranker {name!r} needs sentence-transformers ({exc}): "
                                   f"{TORCH_HINT}") from exc
        self.name = name
        self.batch_size = max(1, int(batch_size))
        try:
            self._model = _CrossEncoder(name, max_length=max_length, device=device)
        except Exception as exc:  # OSError (not on the hub / offline), ValueError, HTTP errors…
            raise ModelUnavailable(f"cannot load cross-encoder {name!r}: {exc}") from exc

    def score(self, query: str, passages: list[str]) -> list[float]:
        items = _check_pairs(query, passages)
        if not items:
            return []
        scores = self._model.predict([(query, p) for p in items], batch_size=self.batch_size,
                                     show_progress_bar=False)
        return [float(s) for s in np.asarray(scores, dtype=np.float64).reshape(len(items), -1)[:, 0]]


def resolve_reranker_path(name_or_path: str, settings: Settings) -> Path | None:
    """The local folder ``name_or_path`` names, if any: the path itself, or a path relative to
    ``settings.model_cache_dir`` (``rerankers/clef2020-e5small``), or a bare name under
    ``model_cache_dir/rerankers`` (what ``train-reranker --out NAME`` writes). None means a
    hub name."""
    raw = Path(name_or_path).expanduser()
    candidates = [raw]
    if not raw.is_absolute():
        candidates += [settings.model_cache_dir / raw, settings.model_cache_dir / RERANKERS_DIR / raw]
    return next((c for c in candidates if c.is_dir()), None)


def read_manifest(folder: Path) -> dict[str, Any]:
    """The ``factsieve_reranker.json`` of a trained folder ({} when there is none)."""
    try:
        data = json.loads((Path(folder) / RERANKER_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def load_reranker(name_or_path: str, settings: Settings, *, batch_size: int = 32,
                  max_seq_length: int | None = None) -> CrossEncoder:
    """A folder with an ONNX model → ``OnnxCrossEncoder`` (its manifest's training
    ``max_length`` unless given, and its training ``languages``); anything else → ``SentenceTransformersCrossEncoder``. A
    committed reranker adapter (``rerankers/NAME``) that ``factsieve model build`` has not built
    yet is refused with that advice."""
    unbuilt = unbuilt_reranker(name_or_path, settings)
    if unbuilt is not None:  # a committed adapter: never fall through to the hub by that name
        raise ModelUnavailable(unbuilt)
    folder = resolve_reranker_path(name_or_path, settings)
    if folder is not None and find_onnx_model(folder) is not None:
        manifest = read_manifest(folder)
        trained = manifest.get("max_length")
        length = max_seq_length or (int(trained) if isinstance(trained, int) else None) \
            or settings.max_seq_length
        languages, gate = manifest.get("languages"), manifest.get(GATE_KEY)
        return OnnxCrossEncoder(folder, name=name_or_path, max_seq_length=length,
                                batch_size=batch_size,
                                languages=languages if isinstance(languages, list) else None,
                                gate=gate if isinstance(gate, dict) else None)
    return SentenceTransformersCrossEncoder(str(folder) if folder is not None else name_or_path,
                                            max_length=max_seq_length, batch_size=batch_size)


@dataclass(frozen=True)
class UnavailableReranker:
    """A configured reranker that failed to load, with its error: a match that should have been
    reranked by it says so (``RerankGate``), rather than that no reranker is configured."""

    name: str
    reason: str

    def score(self, query: str, passages: list[str]) -> list[float]:
        raise ModelUnavailable(f"reranker {self.name!r} failed to load: {self.reason}")


#: the error of each reranker model that failed to load in this process, by model name: a caller
#: that keeps only the loaded ones (``load_rerankers``) hands a matcher ``None``, and the matcher
#: reads why here (``unavailable_reranker``). A later successful load forgets the error.
_LOAD_ERRORS: dict[str, str] = {}


def unavailable_reranker(config: RetrievalConfig) -> UnavailableReranker | None:
    """The configuration's reranker as it failed to load in this process, if it did."""
    model = config.rerank.model if config.rerank is not None else None
    reason = _LOAD_ERRORS.get(model) if model is not None else None
    return None if reason is None else UnavailableReranker(model, reason)


def load_rerankers(configs: dict[str, RetrievalConfig], settings: Settings) -> dict[str, Any]:
    """A reranker per configuration that asks for one and can have it (others are skipped, with
    the reason logged and kept for ``unavailable_reranker``). Configurations naming the same
    model share one loaded instance."""
    loaded: dict[str, CrossEncoder | None] = {}
    out: dict[str, Any] = {}
    for name, cfg in configs.items():
        if cfg.rerank is None:
            continue
        model = cfg.rerank.model
        if model not in loaded:
            try:
                loaded[model] = load_reranker(model, settings)
                _LOAD_ERRORS.pop(model, None)
            except FactSieveError as exc:
                log.warning("configuration %r: reranker %r failed to load, skipped: %s", name, model,
                            exc.detail)
                _LOAD_ERRORS[model] = exc.detail
                loaded[model] = None
        if loaded[model] is not None:
            out[name] = loaded[model]
    return out


def passage(source: dict[str, Any] | None) -> str:
    """The text a cross-encoder reads for a fact-check: its title and claim (the claim alone
    when the title only repeats it). Reranker training builds its pairs with the same text."""
    src = source or {}
    title, claim = src.get("title") or "", src.get("claim") or ""
    return f"{title}\n{claim}" if title and title.strip().lower() != claim.strip().lower() else claim


# -- the reranked order ---------------------------------------------------------------------------
#: probabilities are clipped this far from 0 and 1 before their log-odds are taken
LOG_ODDS_EPS = 1e-15


def reorder(fused: list[Fused], scores: Sequence[float], stage: Rerank) -> list[Fused]:
    """``fused`` with its first ``len(scores)`` in the cross-encoder's order (pure): blended with
    the fused rank when ``stage.weight`` < 1, or with the rank prior when ``stage.rank_prior`` > 0;
    the rest keep their fused order after them. Ranks are renumbered from 1."""
    head, tail = fused[:len(scores)], fused[len(scores):]
    w, n = stage.weight, len(head)
    if stage.rank_prior > 0:
        final = dict(zip((f.id for f in head), rank_prior_scores(scores, [f.rank for f in head],
                                                                 stage.rank_prior)))
    else:  # blend rerank order with fused order when w < 1
        final = {f.id: w * s + (1 - w) * (n - f.rank) / max(n, 1) for f, s in zip(head, scores)}
    ordered = sorted(head, key=lambda f: (-final[f.id], f.rank))
    out = [replace(f, rank=i) for i, f in enumerate(ordered, start=1)]
    return out + [replace(f, rank=len(out) + i) for i, f in enumerate(tail, start=1)]


def promote_sure(fused: list[Fused], scores: Sequence[float], post_lang: str | None, at: float,
                 stage: Rerank) -> list[Fused]:
    """A ``cross`` head (its first candidate in another language than the post) reordered (pure):
    the candidates among the first ``len(scores)`` in the post's language whose cross-encoder
    probability is at least ``at`` go first, in ``reorder``'s order; every other candidate keeps
    its fused order after them. So a fact-check in another language loses its place only to one
    in the post's language that the reranker is sure of: the reranker was measured on answers in
    the post's language, never on crosslingual ones (``rerank_gate.cross_promotion``). Ranks are
    renumbered from 1."""
    head = fused[:len(scores)]
    sure = [(f, s) for f, s in zip(head, scores)
            if post_lang and (f.source or {}).get("lang") == post_lang and s >= at]
    if not sure:
        return fused
    first = reorder([f for f, _ in sure], [s for _, s in sure], stage)
    moved = {f.id for f in first}
    rest = [f for f in fused if f.id not in moved]
    return first + [replace(f, rank=len(first) + i) for i, f in enumerate(rest, start=1)]


def rank_prior_scores(probabilities: Sequence[float], ranks: Sequence[int], prior: float) -> list[float]:
    """A reranked head's final scores: the cross-encoder's log-odds ``ln(p / (1 − p))`` minus
    ``prior · ln(rank)``, ``rank`` the candidate's 1-based fused (first-stage) rank (pure).

    Why: both stages are right most of the time and wrong in different places (on CLEF-2020 the
    reranker fixed dev posts the first stage missed and demoted test posts it had right). Adding
    ``ln P(relevant | rank) ∝ −prior · ln(rank)`` to the reranker's log-odds is the posterior
    under a Zipf-shaped prior over the first stage's ranks: a confident reranker still reorders
    the head, while a near tie goes to the first stage's order. Blending probabilities with the
    rank (``weight`` < 1) cannot do this: a listwise-trained reranker's probabilities sit near 0
    or 1, so any weight either drowns the rank or is drowned by it. ``prior`` 0 is the reranker's
    own order."""
    if len(probabilities) != len(ranks):
        raise ValueError(f"{len(probabilities)} probabilities for {len(ranks)} ranks")
    return with_rank_prior([log_odds(p) for p in probabilities], ranks, prior)


def log_odds(p: float) -> float:
    """``ln(p / (1 − p))``, ``p`` clipped ``LOG_ODDS_EPS`` away from 0 and 1 (pure)."""
    q = min(max(float(p), LOG_ODDS_EPS), 1.0 - LOG_ODDS_EPS)
    return math.log(q / (1.0 - q))


def with_rank_prior(logits: Sequence[float], ranks: Sequence[int], prior: float) -> list[float]:
    """``logit − prior · ln(rank)`` per candidate (pure; ranks are 1-based)."""
    if len(logits) != len(ranks):
        raise ValueError(f"{len(logits)} logits for {len(ranks)} ranks")
    if any(r < 1 for r in ranks):
        raise ValueError(f"fused ranks are 1-based, got {list(ranks)}")
    return [float(x) - prior * math.log(r) for x, r in zip(logits, ranks)]
