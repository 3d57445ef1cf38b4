"""The records file: the scores ``factsieve evaluate --record`` measured per retrieval
configuration, kept beside the runtime configurations, not inside them (as pyserini keeps its
regression YAMLs beside its runtime config). The lab writes it; the runtime never reads it.

Shape: ``{"about": …, "configs": {name: [RecordedScore, …]}}``, one record per (dataset, query
split, mode); a new measurement replaces the record with the same key and keeps every other.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

#: Where ``evaluate --record`` writes by default, relative to the current directory (the
#: repository root's committed ``records/retrieval.json`` when run from a checkout).
DEFAULT_RECORDS = Path("records") / "retrieval.json"

#: The metrics a record keeps (latency belongs to ``bench``).
RECORDED_METRICS = ("S@1", "S@5", "S@10", "MAP@5", "MRR@10", "R@100")

ABOUT = ("Scores `factsieve evaluate --record` measured for the retrieval configurations of "
         "plugin/search/configs/retrieval.json, per dataset, query split and mode. The lab writes "
         "this file; the runtime never reads it.")


class RecordedScore(BaseModel):
    """One measurement of a configuration: what ``evaluate --record`` wrote for one (dataset,
    split, mode), and when. ``split`` names the queries scored (``dev+test``, ``all``; see
    ``plugin.lab.evaluate.run.query_split``), so a run on another query set is a separate
    record, not a replacement."""

    model_config = ConfigDict(extra="forbid")

    dataset: str
    split: str
    mode: str
    date: str
    n_queries: int = Field(ge=0)
    #: queries left out because a reranker in the same run was trained on them
    excluded_training_queries: int = Field(default=0, ge=0)
    metrics: dict[str, float]

    @property
    def key(self) -> tuple[str, str, str]:
        return self.dataset, self.split, self.mode


def _read(path: Path) -> dict[str, Any]:
    path = Path(path)
    if not path.exists():
        return {"about": ABOUT, "configs": {}}
    return json.loads(path.read_text(encoding="utf-8"))


def load_records(path: Path = DEFAULT_RECORDS) -> dict[str, list[RecordedScore]]:
    """``{configuration: its records}`` from a records file (empty when there is none yet)."""
    return {name: [RecordedScore.model_validate(s) for s in scores]
            for name, scores in _read(path)["configs"].items()}


def record_scores(doc: dict[str, Any], result: dict[str, Any], *, on: str) -> dict[str, Any]:
    """A copy of a records file's ``doc`` with ``result`` (what ``evaluate`` printed: ``configs``
    as ``{name: {mode: metrics}}``) recorded for each configuration it measured, one
    ``RecordedScore`` per mode dated ``on``. A record with the same (dataset, split, mode) is
    replaced; every other record stays."""
    out = json.loads(json.dumps(doc))
    # the dataset with its extra corpora (``clef2020_task2+vclaims_multilingual``): another index,
    # so another record
    name = result.get("name") or Path(str(result["dataset"])).name
    common = {"dataset": name, "split": result["split"], "date": on,
              "n_queries": result["n_queries"],
              "excluded_training_queries": result.get("excluded_training_queries", 0)}
    for name, per_mode in result["configs"].items():
        scores = out["configs"].setdefault(name, [])
        for mode, metrics in per_mode.items():
            new = RecordedScore(mode=mode, metrics={m: metrics[m] for m in RECORDED_METRICS}, **common)
            scores[:] = [s for s in scores if RecordedScore.model_validate(s).key != new.key]
            scores.append(new.model_dump(mode="json"))
    return out


def write_scores(path: Path, result: dict[str, Any], *, on: str) -> None:
    """Record ``result`` in the records file at ``path``, made (with its folder) if missing."""
    path = Path(path)
    doc = record_scores(_read(path), result, on=on)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
