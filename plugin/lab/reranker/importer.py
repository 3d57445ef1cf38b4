"""``train-reranker import``: finish a model from weights trained on an accelerator box.

``train_packed`` wrote fp16 ``weights-*.pt`` chunks (everything but the frozen word embeddings,
which come from the base model here) and ``train_summary.json``. They are loaded into the base
classifier and the folder is finished exactly as after local training (``export.finish``).
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plugin.errors import BadInput
from plugin.lab.reranker.export import TrainingRecord, finish, output_dir
from plugin.lab.reranker.fit import load_torch, prepare
from plugin.lab.reranker.groups import GroupSource
from plugin.lab.reranker.options import TrainOptions
from plugin.lab.reranker.pack import WORD_EMBEDDINGS

if TYPE_CHECKING:
    from plugin.settings import Settings


def read_remote_run(weights: Path, torch: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The trained state (fp16 chunks merged) and the remote run's ``train_summary.json``."""
    state: dict[str, Any] = {}
    for f in sorted(weights.glob("weights-*.pt")):
        state.update(torch.load(f, weights_only=True))
    if not state:
        raise BadInput(f"no weights-*.pt in {weights}")
    try:
        summary = json.loads((weights / "train_summary.json").read_text())
    except (OSError, ValueError) as exc:
        raise BadInput(f"cannot read {weights / 'train_summary.json'}: {exc}") from exc
    return state, summary


def import_weights(settings: Settings, source: GroupSource, weights: Path, out: str | Path | None,
                   *, base: str | None = None) -> dict[str, Any]:
    """Load ``weights`` into the base model and finish the folder ``out``; the groups (the same
    the pack was made from) give the manifest its training queries and the int8 check its pairs."""
    dest = output_dir(out, settings)
    source.check()
    torch, _ = load_torch()  # fail before minutes of mining, not after
    t_start = time.perf_counter()
    groups, meta = source.load(settings)
    prep = prepare(settings, TrainOptions(), base=base)
    state, summary = read_remote_run(weights, torch)
    missing, unexpected = prep.model.load_state_dict({k: v.float() for k, v in state.items()},
                                                     strict=False)
    if unexpected or set(missing) - {WORD_EMBEDDINGS}:
        raise BadInput(f"{weights} does not fit {prep.base_dir}: missing {missing[:3]}, "
                       f"unexpected {unexpected[:3]}")
    trained = TrainingRecord(
        hparams=summary["hparams"], losses=summary["train_loss"], train_s=summary["training_s"],
        trained_on={"device": summary["device"], "gpu": summary.get("gpu"),
                    "validation_curve": summary.get("validation_curve"),
                    "validation_before": summary.get("validation_before")})
    return finish(prep, groups, meta, dest, trained, t_start=t_start)
