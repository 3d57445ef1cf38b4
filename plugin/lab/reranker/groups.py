"""Training groups: which queries may be trained on, their hard negatives, and the groups on disk.

Mining needs OpenSearch and the first stage; training needs neither, so the groups can be
written here (``train-reranker mine``) and trained on elsewhere. Nothing here imports torch.
"""
from __future__ import annotations

import json
import logging
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plugin.errors import BadInput
from plugin.lab.reranker.options import MiningOptions
from plugin.learn.train.groups import TrainingGroup, mine_groups, training_query_ids

if TYPE_CHECKING:  # the training half runs on boxes with torch but without our API stack
    from plugin.settings import Settings

log = logging.getLogger(__name__)

GROUPS_KIND = "factsieve-reranker-groups"


@dataclass(frozen=True)
class EncodedGroup:
    """A training group as token ids: ``pairs[0]`` is (query, positive), ``pairs[j]`` the
    (query, j-th negative), each encoded once by the tokenizer's pair template."""

    query_id: str
    pairs: tuple[tuple[int, ...], ...]


# -- split ----------------------------------------------------------------------------------------


# -- hard negatives -------------------------------------------------------------------------------


def mine(settings: Settings, dataset_path: Path, mining: MiningOptions = MiningOptions()
         ) -> tuple[list[TrainingGroup], dict[str, Any]]:
    """Hard negatives for every training query from the first stage over the dataset's index."""
    from plugin.embedding import load_embedder
    from plugin.index.store import Store
    from plugin.learn.train.datasets import ensure_dataset_index, load_dataset
    from plugin.search.matcher import Matcher

    dataset = load_dataset(dataset_path)
    train_ids, rule = training_query_ids(dataset.queries)
    if mining.max_queries is not None:
        train_ids = train_ids[:mining.max_queries]
    train_set = set(train_ids)
    queries = [q for q in dataset.queries if str(q["id"]) in train_set]  # nothing else passes here
    store, embedder = Store(settings), load_embedder(settings)
    alias, _ = ensure_dataset_index(store, embedder, dataset, settings)
    matcher = Matcher(store, embedder, settings, alias=alias, config=mining.first_stage)
    t0 = time.perf_counter()
    groups = mine_groups(matcher, store, alias, queries, dataset.qrels["all"], train_ids,
                         depth=mining.depth)
    mining_s = time.perf_counter() - t0
    if not groups:
        raise BadInput(f"no training groups: the training queries of {dataset.path} have no qrels")
    leaked = {g.query_id for g in groups} - train_set
    if leaked:  # cannot happen by construction; refuse loudly rather than train on them
        raise BadInput(f"non-training queries reached training: {sorted(leaked)[:5]}")
    log.info("%d groups from %d training queries (%s), mined in %.0fs", len(groups), len(train_ids),
             rule, mining_s)
    meta = {"dataset": str(dataset.path), "dataset_name": dataset.name, "split_rule": rule,
            "first_stage": mining.first_stage, "depth": mining.depth,
            "embedding_model": embedder.name, "mining_s": round(mining_s, 1),
            "training_query_ids": sorted(train_ids, key=lambda s: (len(s), s))}
    return groups, meta


# -- groups on disk -------------------------------------------------------------------------------
def save_groups(path: Path, groups: list[TrainingGroup], meta: dict[str, Any]) -> None:
    """JSON Lines: a header (what was mined, from what, under which split rule), then a group a
    line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps({"kind": GROUPS_KIND, **meta}, ensure_ascii=False) + "\n")
        for g in groups:
            fh.write(json.dumps({"query_id": g.query_id, "query": g.query, "positive": g.positive,
                                 "negatives": list(g.negatives)}, ensure_ascii=False) + "\n")


def load_groups(path: Path) -> tuple[list[TrainingGroup], dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
        meta = json.loads(lines[0]) if lines else {}
    except (OSError, ValueError) as exc:
        raise BadInput(f"cannot read training groups from {path}: {exc}") from exc
    if meta.get("kind") != GROUPS_KIND:
        raise BadInput(f"{path} is not a file written by `factsieve train-reranker mine`")
    groups = []
    for n, line in enumerate(lines[1:], start=2):
        try:
            d = json.loads(line)
            groups.append(TrainingGroup(str(d["query_id"]), d["query"], d["positive"],
                                        tuple(d["negatives"])))
        except (ValueError, KeyError, TypeError) as exc:
            raise BadInput(f"{path}:{n}: not a training group ({exc})") from exc
    allowed = set(meta.get("training_query_ids") or ())
    leaked = {g.query_id for g in groups} - allowed
    if leaked:
        raise BadInput(f"{path}: groups for queries outside its training split: {sorted(leaked)[:5]}")
    return groups, {k: v for k, v in meta.items() if k != "kind"}


def export_groups(settings: Settings, dataset_path: Path, dest: Path,
                  mining: MiningOptions = MiningOptions()) -> dict[str, Any]:
    """``train-reranker mine``: mine the groups into ``dest`` and say what was written."""
    groups, meta = mine(settings, dataset_path, mining)
    save_groups(dest, groups, meta)
    return {"groups_file": str(dest), "groups": len(groups),
            "training_queries": len(meta["training_query_ids"]), "split_rule": meta["split_rule"],
            "first_stage": meta["first_stage"], "mining_s": meta["mining_s"]}


@dataclass(frozen=True)
class GroupSource:
    """Where a training step takes its groups from: files written by ``mine`` (no OpenSearch
    needed; several: one training set of their union, each file's split kept), or a dataset
    mined on the spot."""

    dataset: Path | None = None
    files: tuple[Path, ...] = ()
    mining: MiningOptions = field(default_factory=MiningOptions)

    def check(self) -> None:
        if (self.dataset is None) == (not self.files):
            raise BadInput("give --dataset (to mine training groups) or --groups FILE, not both")

    def load(self, settings: Settings) -> tuple[list[TrainingGroup], dict[str, Any]]:
        self.check()
        if self.files:
            return merge_sources([load_groups(f) for f in self.files])
        assert self.dataset is not None  # check() saw to it
        return mine(settings, self.dataset, self.mining)


def merge_sources(loaded: list[tuple[list[TrainingGroup], dict[str, Any]]]
                  ) -> tuple[list[TrainingGroup], dict[str, Any]]:
    """One training set from several groups files (pure): their groups in order, and a header
    that keeps each file's own (``sources``: its dataset and training query ids, so an
    evaluation of any of those datasets leaves out what was trained on). One file: its own
    header. A query id in two files is refused: it would train twice under one name."""
    if len(loaded) == 1:
        return loaded[0]
    seen: dict[str, str] = {}
    for groups, meta in loaded:
        for qid in {g.query_id for g in groups}:
            if qid in seen:
                raise BadInput(f"query id {qid!r} is in the groups of both {seen[qid]} and "
                               f"{meta.get('dataset_name')}")
            seen[qid] = str(meta.get("dataset_name"))
    metas = [meta for _, meta in loaded]
    first_stages = sorted({str(m.get("first_stage")) for m in metas})
    return [g for groups, _ in loaded for g in groups], {
        "dataset_name": "+".join(str(m.get("dataset_name")) for m in metas),
        "split_rule": "; ".join(f"{m.get('dataset_name')}: {m.get('split_rule')}" for m in metas),
        "first_stage": first_stages[0] if len(first_stages) == 1 else ",".join(first_stages),
        "training_query_ids": sorted(seen, key=lambda s: (len(s), s)),
        "sources": [{k: m.get(k) for k in ("dataset", "dataset_name", "split_rule", "first_stage",
                                           "training_query_ids")} for m in metas]}


# -- epochs ---------------------------------------------------------------------------------------
def sample_epoch(sizes: list[int], per_step: int, negatives: int, pool: int,
                 rng: random.Random) -> list[list[tuple[int, int]]]:
    """One epoch as steps of (group, candidate) picks: shuffled groups, each contributing its
    positive (candidate 0) and ``negatives`` candidates sampled from the top ``pool`` of its
    ``sizes[g]`` negatives (1-based), padded by repetition when the first stage returned fewer."""
    order = list(range(len(sizes)))
    rng.shuffle(order)
    steps = []
    for start in range(0, len(order), per_step):
        step: list[tuple[int, int]] = []
        for g in order[start:start + per_step]:
            cands = list(range(1, min(sizes[g], pool) + 1))
            picked = rng.sample(cands, negatives) if len(cands) >= negatives else \
                [cands[j % len(cands)] for j in range(negatives)]
            step += [(g, 0), *((g, c) for c in picked)]
        steps.append(step)
    return steps


def epoch_batches(groups: list[TrainingGroup], per_step: int, negatives: int, pool: int,
                  rng: random.Random) -> list[tuple[list[str], list[str]]]:
    """One epoch as (queries, passages) lists, as ``sample_epoch`` picks them: whole groups,
    positive first (what the encoded training loop sees, in text)."""
    sizes = [len(g.negatives) for g in groups]
    out = []
    for step in sample_epoch(sizes, per_step, negatives, pool, rng):
        out.append(([groups[g].query for g, _ in step],
                    [groups[g].positive if c == 0 else groups[g].negatives[c - 1] for g, c in step]))
    return out


def encode_groups(tok: Any, groups: list[TrainingGroup], *, pool: int, max_length: int
                  ) -> list[EncodedGroup]:
    """Tokenise every pair an epoch can sample, once (truncated longest-first, as at inference)."""
    out = []
    for g in groups:
        passages = [g.positive, *g.negatives[:pool]]
        enc = tok([g.query] * len(passages), passages, truncation=True, max_length=max_length)
        out.append(EncodedGroup(g.query_id, tuple(tuple(ids) for ids in enc["input_ids"])))
    return out
