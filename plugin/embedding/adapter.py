"""Query-tower adapters: low-rank weight deltas that fine-tune the query side of the encoder only.

**Why the query side only.** A fact-check index holds passage vectors from the base encoder. An
encoder fine-tuned on both sides would need every index re-embedded before it could serve; one
fine-tuned on the query side (the passage tower frozen, as in "locked-tower" tuning) drops into an
existing index: the posts are embedded by the tuned copy, the fact-checks stay as they are. It also
makes training cheap enough for two CPU cores: the passage vectors are fixed, so every training
query is scored against the *whole* corpus (a full softmax, every fact-check a negative) and only
the query's own forward and backward pass is computed.

**Why low-rank.** LoRA (Hu et al., 2021): each adapted weight ``W`` (``out x in``) becomes
``W + scale * B @ A`` with ``A`` ``r x in`` and ``B`` ``out x r``. With rank 8 on the six matrices
of the top four layers that is 221k numbers, 0.45 MB in fp16: small enough to commit, so a fresh
clone gets the trained model by merging it into the packaged base model (``factsieve model build``)
instead of training anything.

An adapter is two files beside each other: ``<name>.npz`` (``<weight>.A`` / ``<weight>.B`` arrays,
``Hugging Face BertModel`` weight names) and ``<name>.json`` (its manifest: base model, rank,
scale, layers, training data and the scores it was measured with). numpy only: building the tuned
model needs no training framework.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from plugin.artefacts import ENCODERS, artefact_dir
from plugin.errors import ModelUnavailable

#: The matrices of a BERT layer an adapter may touch, as Hugging Face names them.
ADAPTABLE = ("attention.self.query", "attention.self.key", "attention.self.value",
             "attention.output.dense", "intermediate.dense", "output.dense")


@dataclass(frozen=True)
class QueryAdapter:
    """A named set of low-rank deltas and the manifest that says what they were trained on."""

    name: str
    #: weight name (``encoder.layer.11.attention.self.query.weight``) -> (A ``r x in``, B ``out x r``)
    deltas: Mapping[str, tuple[np.ndarray, np.ndarray]]
    scale: float
    manifest: Mapping[str, Any] = field(default_factory=dict)
    #: the folder it was read from (``None``: built in memory)
    folder: Path | None = None
    #: whole weights the adapter adds or replaces (a reranker's head: ``pooler.dense.weight``,
    #: ``classifier.weight``, ...), stored as they are
    arrays: Mapping[str, np.ndarray] = field(default_factory=dict)

    @property
    def base_model(self) -> str | None:
        return self.manifest.get("base_model")

    @property
    def rank(self) -> int:
        return int(next(iter(self.deltas.values()))[0].shape[0]) if self.deltas else 0

    def merged(self, weights: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``weights`` with every adapted matrix replaced by ``W + scale * B @ A`` and the whole
        ``arrays`` added (a new dict; the input is not touched). Refuses deltas whose shapes do not
        fit the weights."""
        out = dict(weights)
        out.update({k: np.asarray(v, dtype=np.float32) for k, v in self.arrays.items()})
        for name, (a, b) in self.deltas.items():
            if name not in weights:
                raise ModelUnavailable(f"adapter {self.name!r} adapts {name}, which the base model "
                                       "does not have: it was trained for another architecture")
            w = np.asarray(weights[name], dtype=np.float32)
            if b.shape[0] != w.shape[0] or a.shape[1] != w.shape[1] or a.shape[0] != b.shape[1]:
                raise ModelUnavailable(f"adapter {self.name!r}: {name} is {w.shape}, the delta "
                                       f"is {b.shape[0]}x{a.shape[1]} (rank {a.shape[0]})")
            out[name] = w + np.float32(self.scale) * (b.astype(np.float32) @ a.astype(np.float32))
        return out


def adapter_dir(folder: Path | None = None) -> Path:
    """Where adapters are read from: ``folder``, or the committed ones."""
    if folder is not None:
        return Path(folder)
    return artefact_dir(ENCODERS)


def adapter_folder_for(name: str, extra: Path | None) -> Path | None:
    """``extra`` (``FACTSIEVE_QUERY_ADAPTER_DIR``) when it holds adapter ``name``, else ``None``:
    the committed folder."""
    if extra is not None and (Path(extra) / f"{name}.npz").is_file():
        return Path(extra)
    return None


def find_adapter(name: str, extra: Path | None) -> QueryAdapter:
    """Adapter ``name`` from ``extra`` (``FACTSIEVE_QUERY_ADAPTER_DIR``) when it is there, else
    from the committed ones."""
    return load_adapter(name, adapter_folder_for(name, extra))


def known_adapters(extra: Path | None) -> list[str]:
    """Every adapter name a deployment can use: the committed ones and ``extra``'s."""
    return sorted(set(packaged_adapters()) | set(packaged_adapters(extra) if extra else []))


def packaged_adapters(folder: Path | None = None) -> list[str]:
    """Names of the adapters in ``folder`` (the committed ones by default)."""
    d = adapter_dir(folder)
    return sorted(p.stem for p in d.glob("*.npz") if p.with_suffix(".json").is_file()) \
        if d.is_dir() else []


def save_adapter(folder: Path, name: str, deltas: Mapping[str, tuple[np.ndarray, np.ndarray]],
                 scale: float, manifest: Mapping[str, Any],
                 whole: Mapping[str, np.ndarray] | None = None) -> Path:
    """Write ``<name>.npz`` (fp16) and ``<name>.json``; returns the npz path. ``whole``: weights
    stored as they are (under their own names; deltas are ``<weight>.A`` / ``<weight>.B``)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {k: np.asarray(v, dtype=np.float16) for k, v in sorted((whole or {}).items())}
    for weight, (a, b) in sorted(deltas.items()):
        arrays[f"{weight}.A"] = np.asarray(a, dtype=np.float16)
        arrays[f"{weight}.B"] = np.asarray(b, dtype=np.float16)
    path = folder / f"{name}.npz"
    np.savez_compressed(path, **arrays)
    meta = {**manifest, "name": name, "scale": float(scale),
            "rank": int(next(iter(deltas.values()))[0].shape[0]) if deltas else 0,
            "weights": sorted(deltas), **({"whole": sorted(whole)} if whole else {})}
    (folder / f"{name}.json").write_text(json.dumps(meta, indent=2, sort_keys=False) + "\n")
    return path


def load_adapter(name: str, folder: Path | None = None) -> QueryAdapter:
    """The adapter ``name`` from ``folder`` (the committed ones by default), or a
    ``ModelUnavailable`` that lists the known names."""
    d = adapter_dir(folder)
    npz, meta_path = d / f"{name}.npz", d / f"{name}.json"
    if not npz.is_file() or not meta_path.is_file():
        known = ", ".join(packaged_adapters(folder)) or "none"
        raise ModelUnavailable(f"no query adapter {name!r} in {d} (known: {known})")
    try:
        manifest = json.loads(meta_path.read_text())
        with np.load(npz) as data:
            arrays = {k: np.asarray(data[k]) for k in data.files}
    except (OSError, ValueError) as exc:
        raise ModelUnavailable(f"cannot read query adapter {name!r} in {d}: {exc}") from exc
    deltas: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for key in arrays:
        if key.endswith(".A"):
            weight = key[:-2]
            if f"{weight}.B" not in arrays:
                raise ModelUnavailable(f"query adapter {name!r}: {weight} has A but no B")
            deltas[weight] = (arrays[key], arrays[f"{weight}.B"])
    if not deltas:
        raise ModelUnavailable(f"query adapter {name!r} in {d} holds no deltas")
    whole = {k: v for k, v in arrays.items() if not k.endswith((".A", ".B"))}
    return QueryAdapter(name=name, deltas=deltas, scale=float(manifest.get("scale", 1.0)),
                        manifest=manifest, folder=d, arrays=whole)
