"""``factsieve model build``: every model a deployment serves, built into the model cache.

The packaged test model (when it is the configured one), then a query tower per query adapter
(committed, and ``FACTSIEVE_QUERY_ADAPTER_DIR``'s), a cross-encoder per committed reranker
adapter and the configured verdict model when it is a committed fine-tuned one
(``FACTSIEVE_VERDICT_MODEL``), each merged into this deployment's base model. Every step reuses a current folder, so running it again is cheap; the
Dockerfile, ``make demo`` and ``make test`` run it.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plugin.build.adapted import build_lora_reranker, build_query_tower, build_verdict_model
from plugin.build.folder import build_test_model
from plugin.embedding import rebuilt_model_dir
from plugin.embedding.adapter import known_adapters
from plugin.errors import ModelUnavailable
from plugin.search.lora_reranker import packaged_rerankers
from plugin.settings import TEST_MODEL
from plugin.verify.verdict_model import packaged_models

if TYPE_CHECKING:
    from plugin.settings import Settings


def build_models(settings: Settings, *, force: bool = False) -> dict[str, Any]:
    """Build what ``settings`` serves; returns what was built where, an adapter that cannot be
    built for this base model as ``"skipped: <why>"``."""
    out: dict[str, Any] = {"model": settings.embedding_model}
    if settings.embedding_model == TEST_MODEL:
        out["path"] = str(build_test_model(rebuilt_model_dir(settings), force=force))
    out["query_towers"] = _each(known_adapters(settings.query_adapter_dir),
                                lambda name: build_query_tower(settings, name, force=force))
    out["rerankers"] = _each(packaged_rerankers(), lambda name: build_lora_reranker(settings, name, force=force))
    # only the configured one: a built verdict model is ~470 MB of ONNX (fp32)
    out["verdict_models"] = _each([n for n in packaged_models() if n == settings.verdict_model],
                                  lambda name: build_verdict_model(settings, name, force=force))
    return out


def _each(names: list[str], build: Callable[[str], Path]) -> dict[str, str]:
    """Where each adapter was built, or ``"skipped: <why>"`` for one this base model cannot take."""
    out = {}
    for name in names:
        try:
            out[name] = str(build(name))
        except ModelUnavailable as exc:
            out[name] = f"skipped: {exc}"
    return out
