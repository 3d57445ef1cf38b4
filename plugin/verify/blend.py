"""The weight of the verdict model in the LLM/model blend, per LLM (``configs/blend.json``).

An LLM configuration's verdict is the highest label of ``(1 − w)·llm + w·model``: the LLM's
ratings blended with the verdict model's (``Services.verification.head()``) probabilities. ``w`` is
the model's weight; how well an LLM rates depends on the LLM, so ``w`` is chosen per LLM, out of
fold on the tuning split (``factsieve blend-weight choose``), and recorded here:

    {"default": <w for an LLM nobody measured>, "models": {"<FACTSIEVE_LLM_MODEL>": <w>, ...}}

Weights only: what was measured, and how the default was set, is in ``docs/verification.md``.
A configuration's ``head_weight`` overrides the table (``None`` reads it).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from plugin.errors import BadInput


def packaged_path() -> Path:
    return Path(str(resources.files("plugin.verify").joinpath("configs/blend.json")))


def blend_weight(llm_model: str, table: Mapping[str, Any]) -> float:
    """The verdict model's weight for ``llm_model`` (``FACTSIEVE_LLM_MODEL``; "" when the server
    is not told one): its own entry in ``table["models"]``, else ``table["default"]``."""
    return float(table.get("models", {}).get(llm_model, table["default"]))


def blended(llm: Mapping[str, float], model: Mapping[str, float], w: float) -> dict[str, float]:
    """``(1 − w)·llm + w·model`` per label, rounded to 4 places: the one place the blend is
    computed, for the verifier and for the lab that chooses ``w`` (pure)."""
    from plugin.verify.scoring import LABELS

    return {k: round((1 - w) * llm.get(k, 0.0) + w * model.get(k, 0.0), 4) for k in LABELS}


def check_table(table: Any, where: str = "blend.json") -> dict[str, Any]:
    """``table`` when it is a blend table (weights in 0–1), else ``BadInput`` naming the fault."""
    if not isinstance(table, dict) or "default" not in table or not isinstance(table.get("models", {}), dict):
        raise BadInput(f"{where}: expected {{\"default\": w, \"models\": {{name: w}}}}")
    for name, w in [("default", table["default"]), *table.get("models", {}).items()]:
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0.0 <= w <= 1.0:
            raise BadInput(f"{where}: the weight of {name!r} must be a number in 0–1, not {w!r}")
    return table


@cache
def _read(path: str) -> dict[str, Any]:
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BadInput(f"cannot read the blend weights at {path!r}: {exc}") from None
    return check_table(raw, path)


def load_table(path: Path | None = None) -> dict[str, Any]:
    """The blend table (the packaged one when ``path`` is ``None``), read once per process."""
    return _read(str(path or packaged_path()))


def with_weight(table: Mapping[str, Any], llm_model: str, w: float) -> dict[str, Any]:
    """``table`` with ``llm_model``'s weight set to ``w`` (names sorted, the rest unchanged)."""
    if not llm_model:
        raise BadInput("name the LLM the weight is for (FACTSIEVE_LLM_MODEL, or --llm-model)")
    models = {**table.get("models", {}), llm_model: round(float(w), 4)}
    return check_table({"default": table["default"], "models": dict(sorted(models.items()))})


def write_table(table: Mapping[str, Any], path: Path, flag: str = "the blend table") -> Path:
    """Write ``table`` to ``path``, which must lie outside the installed package (serving reads
    the packaged table; a new weight ships as a reviewed change to it)."""
    from plugin.artefacts import outside_package

    path = outside_package(path, flag)
    path.write_text(json.dumps(check_table(dict(table)), indent=2) + "\n", encoding="utf-8")
    _read.cache_clear()
    return path
