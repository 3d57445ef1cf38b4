"""Training on another machine: ``train-reranker pack`` writes a small torch-only bundle here,
``train_packed`` trains it on an accelerator box (``scripts/train_reranker_remote.py``), and
``train-reranker import`` (``importer``) finishes the model from the weights it wrote back.

This module and what it imports at the top need only torch and transformers, not our stack:
the accelerator box has this checkout and torch, nothing else.
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from plugin.errors import BadInput
from plugin.lab.reranker.fit import (freeze, load_torch, prepare, rank_positive, resolve_device,
                                     train_epochs)
from plugin.lab.reranker.groups import EncodedGroup, GroupSource, encode_groups
from plugin.lab.reranker.options import TrainOptions

if TYPE_CHECKING:
    from plugin.settings import Settings

WORD_EMBEDDINGS = "bert.embeddings.word_embeddings.weight"
#: the token ids of a pack are int16
MAX_PACK_VOCAB = 2**15


def pack_for_remote(model: Any, encoded: list[EncodedGroup], pad_id: int, hparams: dict[str, Any],
                    path: Path, torch: Any) -> dict[str, Any]:
    """Everything a torch-only box needs to train, small enough to carry: the classifier's
    weights in fp16 with the word-embedding matrix cut down to the tokens the groups use
    (the full 250k-row matrix is 3/4 of the model and stays frozen), and the groups' token ids
    renumbered into that vocabulary. No tokenizer, no OpenSearch, no factsieve settings."""
    used = sorted({t for g in encoded for p in g.pairs for t in p} | {pad_id})
    remap = np.full(max(used) + 1, -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    state = {k: v.detach().to(torch.float16) for k, v in model.state_dict().items()}
    state[WORD_EMBEDDINGS] = state[WORD_EMBEDDINGS][torch.tensor(used)]
    config = model.config.to_dict()
    config["vocab_size"] = len(used)
    if len(used) > MAX_PACK_VOCAB:
        raise BadInput(f"the groups use {len(used)} distinct tokens; a pack holds at most {MAX_PACK_VOCAB}")
    pairs = [p for g in encoded for p in g.pairs]
    groups = {"query_ids": [g.query_id for g in encoded],
              "group_sizes": torch.tensor([len(g.pairs) for g in encoded], dtype=torch.int32),
              "pair_lengths": torch.tensor([len(p) for p in pairs], dtype=torch.int32),
              "tokens": torch.tensor(remap[[t for p in pairs for t in p]], dtype=torch.int16)}
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"config": config, "state": state, "groups": groups, "pad_id": int(remap[pad_id]),
                "hparams": hparams}, path)
    return {"path": str(path), "bytes": path.stat().st_size, "vocab": len(used),
            "groups": len(encoded), "pairs": len(pairs)}


def write_pack(settings: Settings, source: GroupSource, dest: Path,
               options: TrainOptions = TrainOptions(), *, base: str | None = None) -> dict[str, Any]:
    """``train-reranker pack``: groups (mined or read) and the base model, as ``pack_for_remote``
    writes them to ``dest``; ``options`` travel in the pack as the remote run's defaults."""
    source.check()
    load_torch()  # fail before minutes of mining, not after
    groups, meta = source.load(settings)
    prep = prepare(settings, options, base=base)
    encoded = encode_groups(prep.tokenizer, groups, pool=options.pool, max_length=options.max_length)
    return {"pack": pack_for_remote(prep.model, encoded, prep.tokenizer.pad_token_id,
                                    options.hparams(), dest, prep.torch),
            "hparams": options.hparams(), "training_queries": len(meta["training_query_ids"])}


def unpack_groups(groups: dict[str, Any]) -> list[EncodedGroup]:
    tokens = groups["tokens"].tolist()
    lengths = groups["pair_lengths"].tolist()
    out, t, p = [], 0, 0
    for qid, size in zip(groups["query_ids"], groups["group_sizes"].tolist()):
        pairs = []
        for n in lengths[p:p + size]:
            pairs.append(tuple(tokens[t:t + n]))
            t += n
        p += size
        out.append(EncodedGroup(qid, tuple(pairs)))
    return out


def hold_out(groups: list[EncodedGroup], share: float) -> tuple[list[EncodedGroup], list[EncodedGroup]]:
    """(training, validation): about ``share`` of the query ids, chosen by sha1, go to validation
    with all their groups, so no query is on both sides."""
    if share <= 0:
        return groups, []
    held = {q for q in {g.query_id for g in groups}
            if int(hashlib.sha1(q.encode()).hexdigest(), 16) % 1000 < share * 1000}
    return [g for g in groups if g.query_id not in held], [g for g in groups if g.query_id in held]


def train_packed(pack: Path, out_dir: Path, *, device: str = "auto", validation_share: float = 0.0,
                 chunk_mb: int = 15, **overrides: Any) -> dict[str, Any]:
    """Train from ``pack_for_remote``'s file (torch + transformers only) and write the trained
    weights, minus the frozen word embeddings, as fp16 chunks of at most ``chunk_mb`` MB, with
    ``train_summary.json``. ``overrides`` are ``TrainOptions`` fields over the pack's own."""
    torch, transformers = load_torch()
    blob = torch.load(pack, weights_only=False)
    options = TrainOptions(**{**blob["hparams"], **overrides})
    torch.manual_seed(options.seed)
    dev = resolve_device(torch, device)
    config = transformers.AutoConfig.for_model(**{k: v for k, v in blob["config"].items()
                                                  if k not in ("transformers_version",)})
    model = transformers.AutoModelForSequenceClassification.from_config(config)
    model.load_state_dict({k: v.float() for k, v in blob["state"].items()})
    freeze(model, torch, freeze_embeddings=True, train_layers=options.train_layers)
    groups, validation = hold_out(unpack_groups(blob["groups"]), validation_share)
    t0 = time.perf_counter()
    baseline = rank_positive(model.to(dev), validation, blob["pad_id"], torch, dev) if validation else None
    losses, curve = train_epochs(model, groups, options, pad_id=blob["pad_id"], torch=torch,
                                 device=dev, validation=validation or None)
    train_s = time.perf_counter() - t0
    out_dir.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to(torch.float16) for k, v in model.state_dict().items()
             if k != WORD_EMBEDDINGS}
    chunk, size, n = {}, 0, 0
    for k, v in state.items():
        if chunk and size + v.numel() * 2 > chunk_mb * 2**20:
            torch.save(chunk, out_dir / f"weights-{n}.pt")
            chunk, size, n = {}, 0, n + 1
        chunk[k], size = v, size + v.numel() * 2
    torch.save(chunk, out_dir / f"weights-{n}.pt")
    summary = {"hparams": options.hparams(), "device": str(dev),
               "gpu": torch.cuda.get_device_name(0) if dev.type == "cuda" else None,
               "training_groups": len(groups), "validation_groups": len(validation),
               "validation_before": baseline, "validation_curve": curve,
               "train_loss": [round(x, 4) for x in losses], "training_s": round(train_s, 1),
               "weight_files": n + 1, "torch": torch.__version__, "transformers": transformers.__version__}
    (out_dir / "train_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary
