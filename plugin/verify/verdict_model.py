"""The fine-tuned verdict model: a cross-encoder classifier over (claim and its date, evidence) →
the four verdict labels, without an LLM.

``factsieve train-verdict --kind cross-encoder`` (``plugin.lab.verdict_xenc``) fine-tunes the
packaged encoder with LoRA on its top layers plus a four-label head (JAX, on the CPU or an
accelerator) and commits the adapter (``plugin/artefacts/verdict/<name>.npz`` + ``.json``, a few
hundred KB). ``factsieve model build`` (run by ``make demo``, ``make test`` and the Dockerfile;
it builds the configured one) merges it into the encoder and writes an ONNX classifier folder
under ``<model cache>/verdict/<name>/``, which this module serves torch-free through ONNX
Runtime, like the rerankers; ``load_verdict_model`` says when it is not built yet.

The model reads one token sequence per claim: the pair (``claim_segment``, ``evidence_segment``),
truncated longest-first at the adapter's ``max_length`` by the encoder's own tokenizer. These two
functions are the one place the model's input is written, for training and serving alike. The
same model rates one passage alone (``batch_scores`` with one pair), which is how the ``cited``
strategy reads each passage's stance toward the claim.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from plugin.artefacts import VERDICT, artefact_dir
from plugin.errors import ModelMismatch, ModelUnavailable
from plugin.verify.head import MAX_PAIRS, pair_text, softmax
from plugin.verify.scoring import LABELS

if TYPE_CHECKING:
    from plugin.settings import Settings

#: ``kind`` in a verdict-model adapter's manifest.
KIND = "verdict-cross-encoder-lora"
#: The built folder's manifest (beside ``onnx/`` and the tokenizer).
MANIFEST = "factsieve_verdict.json"
#: Where built verdict models go, under ``Settings.model_cache_dir``.
BUILT_DIR = "verdict"
#: Bump when a built folder's content would change for the same adapter.
BUILDER_VERSION = 1
#: Bump when ``claim_segment`` / ``evidence_segment`` change: an adapter of another version is refused.
INPUT_VERSION = "claim-date-qa-v1"
#: Between two evidence items in the evidence segment.
SEPARATOR = " | "
#: Manifest keys carried from the adapter into the built folder's manifest.
CARRIED = ("kind", "input_version", "labels", "max_length", "pooling", "int8", "cv", "data",
           "options", "trained_on", "seconds")


def claim_segment(claim: str, date: str | None) -> str:
    """The first segment: the claim, after its date when known (``"2020-10-25: 5G causes …"``)."""
    text = " ".join(str(claim).split())
    return f"{date}: {text}" if date else text


def evidence_segment(pairs: Sequence[Mapping[str, Any]]) -> str:
    """The second segment: the first ``MAX_PAIRS`` evidence items as ``"question answer"`` (the
    head's ``pair_text``), joined by ``SEPARATOR``; ``"no evidence"`` when there are none."""
    texts = [t for t in (pair_text(p) for p in list(pairs)[:MAX_PAIRS]) if t]
    return SEPARATOR.join(texts) or "no evidence"


def adapter_dir() -> Path:
    """The committed verdict adapters' folder (``plugin/artefacts/verdict``, beside the head)."""
    return artefact_dir(VERDICT)


def packaged_models() -> list[str]:
    """Names of the committed verdict-model adapters (their manifests say ``kind`` ``KIND``)."""
    out = []
    for meta in sorted(adapter_dir().glob("*.json")):
        try:
            kind = json.loads(meta.read_text(encoding="utf-8")).get("kind")
        except (OSError, ValueError):
            continue
        if kind == KIND and meta.with_suffix(".npz").is_file():
            out.append(meta.stem)
    return out


def built_dir(settings: Settings, name: str) -> Path:
    return settings.model_cache_dir / BUILT_DIR / name


def load_verdict_model(settings: Settings, name: str) -> CrossEncoderVerdictModel:
    """The built committed verdict model ``name``; ``ModelUnavailable`` when there is no such
    adapter, or its folder is missing or older than the adapter (serving never builds: ``factsieve
    model build`` does)."""
    from plugin.embedding.query_tower import adapter_digest, is_current

    if name not in packaged_models():
        raise ModelUnavailable(f"no verdict model {name!r} in {adapter_dir()} (known: "
                               f"{', '.join(packaged_models()) or 'none'}): set FACTSIEVE_VERDICT_MODEL "
                               "to one of them or to head")
    folder = built_dir(settings, name)
    if not is_current(folder, adapter_digest(name, adapter_dir()), MANIFEST, BUILDER_VERSION):
        raise ModelUnavailable(f"verdict model {name!r} is not built for this adapter yet: run "
                               "`factsieve model build`")
    return CrossEncoderVerdictModel(folder)


class CrossEncoderVerdictModel:
    """The built verdict model: ``label_scores`` / ``batch_scores`` as the verdict head has them
    (``plugin.verify.verifier.VerdictHead``), the four labels' probabilities summing to 1."""

    def __init__(self, folder: Path, *, threads: int | None = None, batch_size: int = 16,
                 model_file: Path | None = None) -> None:
        from plugin.embedding.onnx_backend import find_onnx_model, open_session, open_tokenizer

        manifest_path = folder / MANIFEST
        model_path = model_file or find_onnx_model(folder)
        if not manifest_path.is_file() or model_path is None:
            raise ModelUnavailable(f"no built verdict model in {folder}: run `factsieve model build`")
        self.folder, self.manifest = folder, json.loads(manifest_path.read_text(encoding="utf-8"))
        self.name = str(self.manifest.get("adapter") or folder.name)
        if self.manifest.get("input_version") != INPUT_VERSION:
            raise ModelMismatch(f"verdict model {self.name!r} reads input "
                                f"{self.manifest.get('input_version')!r}; this code writes "
                                f"{INPUT_VERSION!r}: retrain it with `factsieve train-verdict`")
        if list(self.manifest.get("labels") or []) != list(LABELS):
            raise ModelMismatch(f"verdict model {self.name!r} has labels {self.manifest.get('labels')}")
        self.batch_size = max(1, batch_size)
        self._tok, self.pad_id, self.max_length = open_tokenizer(folder, int(self.manifest.get("max_length", 256)))
        self._session, _ = open_session(model_path, threads)

    def label_scores(self, claim: str, qa_pairs: list[dict[str, Any]],
                     date: str | None = None) -> dict[str, float]:
        return self.batch_scores([(claim, qa_pairs)], [date])[0]

    def batch_scores(self, items: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
                     dates: Sequence[str | None] | None = None) -> list[dict[str, float]]:
        if not items:
            return []
        dates = list(dates) if dates is not None else [None] * len(items)
        texts = [(claim_segment(c, d), evidence_segment(p)) for (c, p), d in zip(items, dates)]
        probs = softmax(self.logits(texts))
        return [{label: round(float(v), 4) for label, v in zip(LABELS, row)} for row in probs]

    def logits(self, texts: Sequence[tuple[str, str]]) -> np.ndarray:
        """``len(texts) × 4`` logits, sorted by length into padded batches and put back in order."""
        encs = self._tok.encode_batch(list(texts))
        order = np.argsort([-len(e.ids) for e in encs], kind="stable")
        out = np.empty((len(encs), len(LABELS)), np.float32)
        for start in range(0, len(encs), self.batch_size):
            idx = order[start:start + self.batch_size]
            width = max(len(encs[i].ids) for i in idx)
            ids = np.full((len(idx), width), self.pad_id, np.int64)
            mask = np.zeros((len(idx), width), np.int64)
            for row, i in enumerate(idx):
                n = len(encs[i].ids)
                ids[row, :n], mask[row, :n] = encs[i].ids, 1
            out[idx] = self._session.run(["logits"], {"input_ids": ids, "attention_mask": mask})[0]
        return out
