"""What a reranker run is told: how to mine its training groups and how to train on them.

Two small frozen records instead of two dozen keyword arguments: ``MiningOptions`` for the
first-stage run that finds hard negatives, ``TrainOptions`` for the hyper-parameters, which are
recorded as they are (``hparams()``) in the pack, the remote summary and the model's manifest.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from plugin.errors import BadInput

TRAIN_HINT = "pip install 'factsieve[train]'"
#: The first stage negatives are mined from (and the reranker is meant to sit behind).
FIRST_STAGE = "factsieve"
LOSSES = ("listwise", "bce")


@dataclass(frozen=True)
class MiningOptions:
    """``first_stage`` is the configuration run in crosslingual mode to ``depth`` matches per
    training query; ``max_queries`` keeps only the first N training queries (smoke runs)."""

    first_stage: str = FIRST_STAGE
    depth: int = 50
    max_queries: int | None = None


@dataclass(frozen=True)
class TrainOptions:
    """Hyper-parameters, checked when made (the flag names are the command's).

    Each epoch samples ``negatives`` of a group's top ``pool`` hard negatives; a step holds
    ``batch_size`` pairs (whole groups). ``train_layers`` fine-tunes only the top N encoder layers
    (None: all of them) plus the pooler and classifier, which learn at ``head_lr_scale`` × ``lr``
    (they start from random). ``loss`` is ``listwise`` (softmax cross-entropy over each group)
    or ``bce`` (pointwise)."""

    epochs: int = 4
    negatives: int = 7
    pool: int = 30
    max_length: int = 160
    batch_size: int = 16
    lr: float = 3e-5
    seed: int = 0
    loss: str = "listwise"
    freeze_embeddings: bool = True
    train_layers: int | None = 4
    head_lr_scale: float = 10.0

    def __post_init__(self) -> None:
        if self.loss not in LOSSES:
            raise BadInput(f"unknown loss {self.loss!r}; valid: {', '.join(LOSSES)}")
        for flag, value in (("--epochs", self.epochs), ("--negatives", self.negatives),
                            ("--batch-size", self.batch_size)):
            if value < 1:
                raise BadInput(f"{flag} must be >= 1, got {value}")
        if not 16 <= self.max_length <= 512:
            raise BadInput(f"--max-length must be between 16 and 512, got {self.max_length}")

    def hparams(self) -> dict[str, Any]:
        """As recorded in a pack, a remote summary and the manifest (``TrainOptions(**hparams)``
        reads it back)."""
        return asdict(self)
