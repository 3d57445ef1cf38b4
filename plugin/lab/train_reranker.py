"""Train a cross-encoder reranker from the embedding model's encoder (``factsieve train-reranker``).

No real cross-encoder can be downloaded here, so we fine-tune one: the encoder of the embedding
model (the rebuilt multilingual-e5-small, or any local ``BertModel`` folder) becomes a
``BertForSequenceClassification`` with one logit (``<s>`` token → pooler → classifier, as
sentence-transformers' ``CrossEncoder`` expects), trained on (query, fact-check) pairs.

**Split.** Only *training queries* are ever read: when the dataset's queries carry a ``split``
field, those with ``split == "train"`` (CLEF-2020 Task 2: 546 of the 816 queries in
``../shared``); otherwise those whose ``sha1(query id as written, UTF-8)`` hex digest starts with
``0``–``9``. The other queries (CLEF-2020: the original dev and test tweets, 270) are never
matched, tokenised or looked at, and the datasets' holdout queries (``sha1`` digit ``0``–``4``,
kept outside ``shared/``) are not even on disk. The manifest ``factsieve_reranker.json`` lists
the training query ids so an evaluation can exclude them.

**Negatives** are mined from the first stage the reranker will sit behind: ``Matcher`` with the
``factsieve`` configuration (``--first-stage``) in crosslingual mode over the dataset's evaluation index, taking the
highest-ranked fact-checks that are not relevant to the query. Each epoch samples ``negatives``
of them from the top ``pool`` for each (query, positive) group. Passages are ``title + claim``
exactly as ``Matcher`` hands them to a reranker, and queries are normalised as ``Matcher`` does.

**Loss.** Listwise softmax cross-entropy over each group of 1 positive + N negatives (the
positive must win its group; Karpukhin-style "localized contrastive" training of rerankers) by
default; ``bce`` (pointwise binary cross-entropy) is kept for comparison.

**Output**: a Hugging Face folder (safetensors, config, tokenizer) that ``CrossEncoder(path)``
loads, ``onnx/model.onnx`` (``torch.onnx.export``, opset 17, dynamic batch/sequence, inputs
``input_ids`` + ``attention_mask``, output ``logits``) and ``onnx/model_int8.onnx`` (dynamic
int8) when int8 ranks the check groups like fp32 — otherwise it is written as
``onnx/model_int8.disagrees.onnx`` and fp32 stays the file ``OnnxCrossEncoder`` picks.

**Where it runs.** On CPU, or on CUDA (bf16 autocast) with ``--device``. The steps can also be
split across machines: ``--export-groups`` mines and stops (no torch), ``--pack FILE`` writes a
small torch-only training bundle (vocabulary cut to the tokens the groups use), which
``scripts/train_reranker_remote.py`` trains on an accelerator box, and ``--remote-weights DIR``
imports what it wrote back and finishes the folder here. That is how the CLEF-2020 reranker was
trained (an H100 lent for the session; see the manifest's ``trained_on``).

Needs torch and transformers: ``pip install 'factsieve[train]'``. Inference does not.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import random
import shutil
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from plugin.errors import BadInput, ModelUnavailable
from plugin.search.rerank import passage

if TYPE_CHECKING:  # the training half runs on boxes with torch but without our API stack
    from plugin.settings import Settings

log = logging.getLogger(__name__)

TRAIN_HINT = "pip install 'factsieve[train]'"
#: The first stage negatives are mined from (and the reranker is meant to sit behind).
FIRST_STAGE = "factsieve"
LOSSES = ("listwise", "bce")
#: int8 becomes the default file only when it puts the same passage first in every check group
#: and its mean Spearman correlation with fp32 over the groups is at least this.
INT8_MIN_SPEARMAN = 0.95


@dataclass(frozen=True)
class TrainingGroup:
    """One positive fact-check for a training query, with the first stage's hard negatives
    (non-relevant passages, best-ranked first)."""

    query_id: str
    query: str
    positive: str
    negatives: tuple[str, ...]


# -- split ----------------------------------------------------------------------------------------
def sha1_digit(query_id: str) -> str:
    return hashlib.sha1(str(query_id).encode("utf-8")).hexdigest()[0]


def training_query_ids(queries: list[dict[str, Any]]) -> tuple[list[str], str]:
    """The ids of the queries the reranker may train on, and the rule that chose them."""
    if any("split" in q for q in queries):
        ids = [str(q["id"]) for q in queries if q.get("split") == "train"]
        rule = "queries with split == 'train'"
    else:
        ids = [str(q["id"]) for q in queries if sha1_digit(str(q["id"])) in "0123456789"]
        rule = "queries whose sha1(id) hex digest starts with 0-9"
    if not ids:
        raise BadInput(f"the dataset has no training queries ({rule})")
    return ids, rule


# -- hard negatives -------------------------------------------------------------------------------
def mine_groups(matcher: Any, store: Any, alias: str, queries: list[dict[str, Any]],
                qrels: dict[str, set[str]], train_ids: list[str], *, depth: int = 50
                ) -> list[TrainingGroup]:
    """Run the first stage for every training query; one group per (query, relevant fact-check)."""
    from plugin.search.matcher import MatchRequest
    from plugin.models import Mode
    from plugin.search.normalize import normalize_post

    allowed = set(train_ids)
    groups: list[TrainingGroup] = []
    positives: dict[str, str | None] = {}
    for q in queries:
        qid = str(q["id"])
        if qid not in allowed or not qrels.get(qid):
            continue  # never look at a query outside the training split
        result = matcher.match(MatchRequest(text=q["text"], lang=q.get("lang"), mode=Mode.CROSS,
                                            k=depth))
        relevant = qrels[qid]
        negatives = tuple(passage(m) for m in result.matches if m["id"] not in relevant)
        text = normalize_post(q["text"]) or q["text"].strip()
        for doc_id in sorted(relevant):
            if doc_id not in positives:
                src = store.find(alias, doc_id)
                positives[doc_id] = passage(src) if src else None
            if positives[doc_id] is None:
                log.warning("query %s: relevant fact-check %s is not in %s", qid, doc_id, alias)
                continue
            groups.append(TrainingGroup(qid, text, positives[doc_id], negatives))
    return groups


# -- groups on disk -------------------------------------------------------------------------------
GROUPS_KIND = "factsieve-reranker-groups"


def save_groups(path: Path, groups: list[TrainingGroup], meta: dict[str, Any]) -> None:
    """JSON Lines: a header (what was mined, from what, under which split rule), then a group a
    line. Mining needs OpenSearch and the first stage; training needs neither, so the two can
    run on different machines (``--export-groups`` here, ``--groups`` on a GPU box)."""
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
        raise BadInput(f"{path} is not a file written by `factsieve train-reranker --export-groups`")
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


# -- training -------------------------------------------------------------------------------------
def _torch() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise ModelUnavailable(f"training a reranker needs torch and transformers ({exc}): "
                               f"{TRAIN_HINT}") from exc
    return torch, transformers


def _sample_epoch(sizes: list[int], per_step: int, negatives: int, pool: int,
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


def _batches(groups: list[TrainingGroup], per_step: int, negatives: int, pool: int,
             rng: random.Random) -> list[tuple[list[str], list[str]]]:
    """One epoch as (queries, passages) lists: whole groups, positive first."""
    sizes = [len(g.negatives) for g in groups]
    out = []
    for step in _sample_epoch(sizes, per_step, negatives, pool, rng):
        out.append(([groups[g].query for g, _ in step],
                    [groups[g].positive if c == 0 else groups[g].negatives[c - 1] for g, c in step]))
    return out


@dataclass(frozen=True)
class EncodedGroup:
    """A training group as token ids: ``pairs[0]`` is (query, positive), ``pairs[j]`` the
    (query, j-th negative), each encoded once by the tokenizer's pair template."""

    query_id: str
    pairs: tuple[tuple[int, ...], ...]


def encode_groups(tok: Any, groups: list[TrainingGroup], *, pool: int, max_length: int
                  ) -> list[EncodedGroup]:
    """Tokenise every pair an epoch can sample, once (truncated longest-first, as at inference)."""
    out = []
    for g in groups:
        passages = [g.positive, *g.negatives[:pool]]
        enc = tok([g.query] * len(passages), passages, truncation=True, max_length=max_length)
        out.append(EncodedGroup(g.query_id, tuple(tuple(ids) for ids in enc["input_ids"])))
    return out


def _collate(pairs: list[tuple[int, ...]], pad_id: int, torch: Any, device: Any) -> tuple[Any, Any]:
    width = max(len(p) for p in pairs)
    ids = torch.full((len(pairs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(pairs), width), dtype=torch.long)
    for i, p in enumerate(pairs):
        ids[i, :len(p)] = torch.tensor(p, dtype=torch.long)
        mask[i, :len(p)] = 1
    return ids.to(device), mask.to(device)


def resolve_device(torch: Any, device: str = "auto") -> Any:
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ModelUnavailable("--device cuda asked for, but torch sees no CUDA device")
    return torch.device(device)


def rank_positive(model: Any, groups: list[EncodedGroup], pad_id: int, torch: Any, device: Any,
                  batch: int = 64) -> dict[str, float]:
    """MRR and accuracy@1 of the positive among each group's candidates (a validation signal
    on held-out *training* queries; evaluation queries never get here)."""
    model.eval()
    rr, top1 = [], []
    with torch.no_grad():
        for g in groups:
            scores = []
            for i in range(0, len(g.pairs), batch):
                ids, mask = _collate(list(g.pairs[i:i + batch]), pad_id, torch, device)
                with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
                    scores.append(model(input_ids=ids, attention_mask=mask).logits[:, 0].float().cpu())
            s = torch.cat(scores)
            rank = int((s > s[0]).sum()) + 1
            rr.append(1.0 / rank)
            top1.append(rank == 1)
    return {"mrr": round(float(np.mean(rr)), 4), "acc@1": round(float(np.mean(top1)), 4),
            "groups": len(groups)}


def _fit(model: Any, groups: list[EncodedGroup], *, pad_id: int, epochs: int, negatives: int,
         pool: int, batch_size: int, lr: float, seed: int, loss_kind: str, torch: Any,
         device: Any = None, head_lr_scale: float = 10.0, validation: list[EncodedGroup] | None = None
         ) -> tuple[list[float], list[dict[str, float]]]:
    """Listwise (or BCE) fine-tuning over pre-encoded groups; on CUDA in bf16 autocast.
    Returns the mean loss per epoch and, with ``validation`` groups, their MRR after each epoch."""
    device = device or torch.device("cpu")
    model.to(device)
    rng = random.Random(seed)
    per_step = max(1, batch_size // (1 + negatives))
    steps_per_epoch = math.ceil(len(groups) / per_step)
    total = steps_per_epoch * epochs
    warmup = max(1, total // 10)
    params = [p for p in model.parameters() if p.requires_grad]
    head = [p for n, p in model.named_parameters() if p.requires_grad
            and (n.startswith("classifier") or ".pooler." in n or n.startswith("pooler"))]
    head_ids = {id(p) for p in head}
    body = [p for p in params if id(p) not in head_ids]
    opt = torch.optim.AdamW([{"params": body, "lr": lr}, {"params": head, "lr": lr * head_lr_scale}],
                            weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warmup, max(0.0, (total - s) / max(1, total - warmup))))
    sizes = [len(g.pairs) - 1 for g in groups]
    losses: list[float] = []
    curve: list[dict[str, float]] = []
    step, t0 = 0, time.perf_counter()
    for epoch in range(epochs):
        model.train()
        epoch_losses = []
        for picks in _sample_epoch(sizes, per_step, negatives, pool, rng):
            ids, mask = _collate([groups[g].pairs[c] for g, c in picks], pad_id, torch, device)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
                logits = model(input_ids=ids, attention_mask=mask).logits
            logits = logits.float().view(-1, 1 + negatives)
            if loss_kind == "listwise":
                target = torch.zeros(logits.shape[0], dtype=torch.long, device=device)
                loss = torch.nn.functional.cross_entropy(logits, target)
            else:
                labels = torch.zeros_like(logits)
                labels[:, 0] = 1.0
                loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            step += 1
            epoch_losses.append(loss.item())
            if step % 10 == 0 or step == total:
                log.info("epoch %d step %d/%d loss %.4f (%.0fs)", epoch + 1, step, total,
                         float(np.mean(epoch_losses[-50:])), time.perf_counter() - t0)
        losses.append(float(np.mean(epoch_losses)))
        if validation:
            curve.append({"epoch": epoch + 1, **rank_positive(model, validation, pad_id, torch, device)})
            log.info("epoch %d validation %s", epoch + 1, curve[-1])
    model.eval()
    model.to("cpu")
    return losses, curve


def prepare_model(base_dir: Path, transformers: Any, torch: Any, *, freeze_embeddings: bool,
                  train_layers: int | None) -> Any:
    """The base encoder as a one-logit sequence classifier, with the parts that stay fixed frozen."""
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        base_dir, num_labels=1, local_files_only=True)
    freeze(model, torch, freeze_embeddings=freeze_embeddings, train_layers=train_layers, init_pooler=True)
    return model


def freeze(model: Any, torch: Any, *, freeze_embeddings: bool, train_layers: int | None,
           init_pooler: bool = False) -> None:
    pooler = model.bert.pooler.dense if hasattr(model, "bert") else None
    if init_pooler and pooler is not None and not bool(pooler.weight.detach().abs().sum()):
        # the rebuilt e5 folder stores a zero pooler (mean pooling never used it)
        torch.nn.init.normal_(pooler.weight, std=model.config.initializer_range)
        torch.nn.init.zeros_(pooler.bias)
    if freeze_embeddings:
        # 250k x 384 multilingual word embeddings: most of the parameters, few of them seen by one
        # English dataset; freezing keeps the other languages' tokens where the encoder put them
        # and makes each optimiser step several times cheaper on CPU.
        model.get_input_embeddings().weight.requires_grad_(False)
    layers = model.bert.encoder.layer if hasattr(model, "bert") else None
    if train_layers is not None and layers is not None and train_layers < len(layers):
        # on a 2-core CPU a full fine-tune of e5-small runs ~1 pair/s; training the top layers
        # only skips most of the backward pass (and the frozen lower layers keep the
        # multilingual alignment the first stage relies on)
        for module in [model.bert.embeddings, *layers[: len(layers) - train_layers]]:
            module.requires_grad_(False)


# -- remote training: pack here, train on an accelerator box, import the weights back ---------------
WORD_EMBEDDINGS = "bert.embeddings.word_embeddings.weight"


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
    if len(used) > 2**15:
        raise BadInput(f"the groups use {len(used)} distinct tokens; a pack holds at most {2**15}")
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


def train_packed(pack: Path, out_dir: Path, *, device: str = "auto", validation_share: float = 0.0,
                 chunk_mb: int = 15, **overrides: Any) -> dict[str, Any]:
    """Train from ``pack_for_remote``'s file (torch + transformers only) and write the trained
    weights, minus the frozen word embeddings, as fp16 chunks of at most ``chunk_mb`` MB."""
    torch, transformers = _torch()
    blob = torch.load(pack, weights_only=False)
    hp = {**blob["hparams"], **overrides}
    torch.manual_seed(hp["seed"])
    dev = resolve_device(torch, device)
    config = transformers.AutoConfig.for_model(**{k: v for k, v in blob["config"].items()
                                                  if k not in ("transformers_version",)})
    model = transformers.AutoModelForSequenceClassification.from_config(config)
    model.load_state_dict({k: v.float() for k, v in blob["state"].items()})
    freeze(model, torch, freeze_embeddings=True, train_layers=hp.get("train_layers"))
    groups = unpack_groups(blob["groups"])
    validation: list[EncodedGroup] = []
    if validation_share > 0:  # held out by query id, so no query is on both sides
        held = {q for q in sorted({g.query_id for g in groups})
                if int(hashlib.sha1(q.encode()).hexdigest(), 16) % 1000 < validation_share * 1000}
        validation = [g for g in groups if g.query_id in held]
        groups = [g for g in groups if g.query_id not in held]
    t0 = time.perf_counter()
    baseline = rank_positive(model.to(dev), validation, blob["pad_id"], torch, dev) if validation else None
    losses, curve = _fit(model, groups, pad_id=blob["pad_id"], epochs=hp["epochs"],
                         negatives=hp["negatives"], pool=hp["pool"], batch_size=hp["batch_size"],
                         lr=hp["lr"], seed=hp["seed"], loss_kind=hp["loss"], torch=torch, device=dev,
                         head_lr_scale=hp["head_lr_scale"], validation=validation or None)
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
    summary = {"hparams": hp, "device": str(dev), "gpu": torch.cuda.get_device_name(0) if dev.type == "cuda" else None,
               "training_groups": len(groups), "validation_groups": len(validation),
               "validation_before": baseline, "validation_curve": curve,
               "train_loss": [round(x, 4) for x in losses], "training_s": round(train_s, 1),
               "weight_files": n + 1, "torch": torch.__version__, "transformers": transformers.__version__}
    (out_dir / "train_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


# -- export ---------------------------------------------------------------------------------------
def export_onnx(folder: Path, dest: Path, torch: Any, transformers: Any) -> None:
    """``torch.onnx.export`` of the saved classifier: opset 17, dynamic batch and sequence."""
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        folder, local_files_only=True, attn_implementation="eager")
    model.eval()

    class Logits(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask).logits

    ids = torch.tensor([[0, 100, 200, 2, 2, 300, 2], [0, 5, 2, 2, 6, 2, 1]], dtype=torch.long)
    mask = (ids != 1).long()
    dest.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(Logits(model), (ids, mask), str(dest), input_names=["input_ids", "attention_mask"],
                          output_names=["logits"], opset_version=17, dynamo=False,
                          dynamic_axes={"input_ids": {0: "batch", 1: "sequence"},
                                        "attention_mask": {0: "batch", 1: "sequence"},
                                        "logits": {0: "batch"}})


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    if len(a) < 2:
        return 1.0
    return float(np.corrcoef(ra, rb)[0, 1])


def check_int8(folder: Path, groups: list[TrainingGroup], max_length: int) -> dict[str, Any]:
    """Rank each check group with the fp32 and the int8 graph and compare."""
    from plugin.search.rerank import OnnxCrossEncoder

    fp32 = OnnxCrossEncoder(folder, max_seq_length=max_length, model_file=folder / "onnx" / "model.onnx")
    int8 = OnnxCrossEncoder(folder, max_seq_length=max_length,
                            model_file=folder / "onnx" / "model_int8.onnx")
    top1, rhos, diffs = [], [], []
    for g in groups:
        passages = [g.positive, *g.negatives[:19]]
        a, b = fp32.logits(g.query, passages), int8.logits(g.query, passages)
        top1.append(int(np.argmax(a)) == int(np.argmax(b)))
        rhos.append(_spearman(a, b))
        diffs.append(float(np.max(np.abs(a - b))))
    return {"groups": len(groups), "top1_agreement": round(float(np.mean(top1)), 4),
            "mean_spearman": round(float(np.mean(rhos)), 4),
            "max_abs_logit_diff": round(float(np.max(diffs)), 4)}


def write_int8(folder: Path, check_groups: list[TrainingGroup], max_length: int
               ) -> tuple[bool, dict[str, Any]]:
    """Write a dynamic-int8 copy of ``onnx/model.onnx``; it becomes the default file
    (``model_int8.onnx``) only if it ranks the check groups like fp32, else it is kept as
    ``model_int8.disagrees.onnx``.

    Measured on the CLEF-2020 reranker: int8 moves logits by up to ~3 and changes the top-1 of
    20-30 % of the check groups, whether quantised from the ``torch.onnx`` export or from
    ``bert_classifier_onnx_model`` over the same weights (whose fp32 logits equal the export's),
    so fp32 stays the default there.
    """
    from plugin.lab.build_e5 import quantize_int8

    onnx_dir = folder / "onnx"
    int8 = onnx_dir / "model_int8.onnx"
    quantize_int8(onnx_dir / "model.onnx", int8)
    agreement = check_int8(folder, check_groups, max_length)
    ok = agreement["top1_agreement"] == 1.0 and agreement["mean_spearman"] >= INT8_MIN_SPEARMAN
    if not ok:
        int8.replace(onnx_dir / "model_int8.disagrees.onnx")
    else:
        (onnx_dir / "model_int8.disagrees.onnx").unlink(missing_ok=True)
    return ok, agreement


# -- the command ----------------------------------------------------------------------------------
def output_dir(out: str | Path, settings: Settings) -> Path:
    """A bare name goes under ``model_cache_dir/rerankers``; anything path-like is a path."""
    from plugin.search.rerank import RERANKERS_DIR

    text = str(out)
    if not text or text in (".", ".."):
        raise BadInput(f"--out must name a model or a folder, got {text!r}")
    if os.sep in text or text.startswith(("~", ".")):
        return Path(text).expanduser()
    return settings.model_cache_dir / RERANKERS_DIR / text


def base_model_dir(settings: Settings, base: str | None = None) -> Path:
    """The encoder to start from: ``base`` or the configured embedding model, as a local folder."""
    from plugin.embedding import TEST_MODEL, rebuilt_model_dir

    name = base or settings.embedding_model
    folder = rebuilt_model_dir(settings) if name == TEST_MODEL else Path(name).expanduser()
    if not (folder / "config.json").is_file():
        raise ModelUnavailable(f"the base model {name!r} is not a local folder with config.json "
                               f"({folder}); run `factsieve model build` or pass a folder")
    return folder


def mine(settings: Settings, dataset_path: Path, *, first_stage: str = FIRST_STAGE, depth: int = 50,
         max_queries: int | None = None) -> tuple[list[TrainingGroup], dict[str, Any]]:
    """Hard negatives for every training query from ``first_stage`` over the dataset's index."""
    from plugin.embedding import load_embedder
    from plugin.lab.evaluate.run import ensure_dataset_index, load_dataset
    from plugin.search.matcher import Matcher
    from plugin.index.store import Store

    dataset = load_dataset(dataset_path)
    train_ids, rule = training_query_ids(dataset.queries)
    if max_queries is not None:
        train_ids = train_ids[:max_queries]
    train_set = set(train_ids)
    queries = [q for q in dataset.queries if str(q["id"]) in train_set]  # nothing else passes here
    store, embedder = Store(settings), load_embedder(settings)
    alias, _ = ensure_dataset_index(store, embedder, dataset, settings)
    matcher = Matcher(store, embedder, settings, alias=alias, config=first_stage)
    t0 = time.perf_counter()
    groups = mine_groups(matcher, store, alias, queries, dataset.qrels["all"], train_ids, depth=depth)
    mining_s = time.perf_counter() - t0
    if not groups:
        raise BadInput(f"no training groups: the training queries of {dataset.path} have no qrels")
    leaked = {g.query_id for g in groups} - train_set
    if leaked:  # cannot happen by construction; refuse loudly rather than train on them
        raise BadInput(f"non-training queries reached training: {sorted(leaked)[:5]}")
    log.info("%d groups from %d training queries (%s), mined in %.0fs", len(groups), len(train_ids),
             rule, mining_s)
    meta = {"dataset": str(dataset.path), "dataset_name": dataset.name, "split_rule": rule,
            "first_stage": first_stage, "depth": depth, "embedding_model": embedder.name,
            "mining_s": round(mining_s, 1),
            "training_query_ids": sorted(train_ids, key=lambda s: (len(s), s))}
    return groups, meta


def train_reranker(settings: Settings, dataset_path: Path | None, out: str | Path | None, *,
                   epochs: int = 4, negatives: int = 7, pool: int = 30, depth: int = 50,
                   max_length: int = 160, batch_size: int = 16, lr: float = 3e-5, seed: int = 0,
                   loss: str = "listwise", threads: int | None = None, base: str | None = None,
                   freeze_embeddings: bool = True, train_layers: int | None = 4,
                   head_lr_scale: float = 10.0, max_queries: int | None = None,
                   first_stage: str = FIRST_STAGE, device: str = "auto",
                   export_groups: Path | None = None, groups_file: Path | None = None,
                   pack: Path | None = None, remote_weights: Path | None = None) -> dict[str, Any]:
    """Mine, train, save, export; returns the JSON summary the command prints.

    ``train_layers`` fine-tunes only the top N encoder layers (None: all of them) plus the
    pooler and classifier, which learn at ``head_lr_scale`` × ``lr`` (they start from random).
    ``max_queries`` keeps only the first N training queries (smoke runs, tuning slices).

    The steps can be split across machines: ``export_groups`` stops after mining (no torch
    needed); ``groups_file`` trains from such a file (no OpenSearch needed); ``pack`` writes
    what a torch-only accelerator box needs (see ``pack_for_remote``/``train_packed``) instead of
    training here; ``remote_weights`` imports the weights it wrote back and finishes the model
    (save, ONNX export, int8 check, manifest) exactly as a local run does."""
    if loss not in LOSSES:
        raise BadInput(f"unknown loss {loss!r}; valid: {', '.join(LOSSES)}")
    for flag, value in (("--epochs", epochs), ("--negatives", negatives), ("--batch-size", batch_size)):
        if value < 1:
            raise BadInput(f"{flag} must be >= 1, got {value}")
    if not 16 <= max_length <= 512:
        raise BadInput(f"--max-length must be between 16 and 512, got {max_length}")
    if groups_file is None and dataset_path is None:
        raise BadInput("give --dataset (to mine training groups) or --groups FILE")
    if export_groups is None and pack is None and out is None:
        raise BadInput("--out is required unless the run stops at --export-groups or --pack")
    if export_groups is None:
        _torch()  # fail before minutes of mining, not after
    t_start = time.perf_counter()
    if groups_file is not None:
        groups, meta = load_groups(groups_file)
    else:
        assert dataset_path is not None
        groups, meta = mine(settings, dataset_path, first_stage=first_stage, depth=depth,
                            max_queries=max_queries)
    if export_groups is not None:
        save_groups(export_groups, groups, meta)
        return {"groups_file": str(export_groups), "groups": len(groups),
                "training_queries": len(meta["training_query_ids"]), "split_rule": meta["split_rule"],
                "first_stage": meta["first_stage"], "mining_s": meta["mining_s"]}

    torch, transformers = _torch()
    from plugin.embedding.onnx_backend import default_threads

    base_dir = base_model_dir(settings, base)
    torch.manual_seed(seed)
    torch.set_num_threads(threads or default_threads())
    transformers.logging.set_verbosity_error()
    tok = transformers.AutoTokenizer.from_pretrained(base_dir, local_files_only=True)
    hparams = {"epochs": epochs, "negatives": negatives, "pool": pool, "max_length": max_length,
               "batch_size": batch_size, "lr": lr, "seed": seed, "loss": loss,
               "freeze_embeddings": freeze_embeddings, "train_layers": train_layers,
               "head_lr_scale": head_lr_scale}
    model = prepare_model(base_dir, transformers, torch, freeze_embeddings=freeze_embeddings,
                          train_layers=train_layers)
    if pack is not None:
        encoded = encode_groups(tok, groups, pool=pool, max_length=max_length)
        return {"pack": pack_for_remote(model, encoded, tok.pad_token_id, hparams, pack, torch),
                "hparams": hparams, "training_queries": len(meta["training_query_ids"])}

    dest = output_dir(out, settings)  # type: ignore[arg-type]
    t1 = time.perf_counter()
    if remote_weights is not None:
        state: dict[str, Any] = {}
        for f in sorted(remote_weights.glob("weights-*.pt")):
            state.update(torch.load(f, weights_only=True))
        summary = json.loads((remote_weights / "train_summary.json").read_text())
        if not state:
            raise BadInput(f"no weights-*.pt in {remote_weights}")
        missing, unexpected = model.load_state_dict({k: v.float() for k, v in state.items()}, strict=False)
        if unexpected or set(missing) - {WORD_EMBEDDINGS}:
            raise BadInput(f"{remote_weights} does not fit {base_dir}: missing {missing[:3]}, "
                           f"unexpected {unexpected[:3]}")
        hparams = summary["hparams"]
        losses = summary["train_loss"]
        train_s = summary["training_s"]
        trained_on = {"device": summary["device"], "gpu": summary.get("gpu"),
                      "validation_curve": summary.get("validation_curve"),
                      "validation_before": summary.get("validation_before")}
    else:
        dev = resolve_device(torch, device)
        encoded = encode_groups(tok, groups, pool=pool, max_length=max_length)
        losses, _ = _fit(model, encoded, pad_id=tok.pad_token_id, epochs=epochs, negatives=negatives,
                         pool=pool, batch_size=batch_size, lr=lr, seed=seed, loss_kind=loss,
                         torch=torch, device=dev, head_lr_scale=head_lr_scale)
        train_s = time.perf_counter() - t1
        trained_on = {"device": str(dev)}
    return finish(model, tok, groups, meta, dest, base_dir=base_dir, base=base or settings.embedding_model,
                  hparams=hparams, losses=losses, train_s=train_s, trained_on=trained_on,
                  t_start=t_start, torch=torch, transformers=transformers)


def finish(model: Any, tok: Any, groups: list[TrainingGroup], meta: dict[str, Any], dest: Path, *,
           base_dir: Path, base: str, hparams: dict[str, Any], losses: list[float], train_s: float,
           trained_on: dict[str, Any], t_start: float, torch: Any, transformers: Any) -> dict[str, Any]:
    """Save the model folder atomically: weights, tokenizer, ONNX (checked against torch), the
    int8 copy when it ranks like fp32, and the manifest with the training query ids."""
    from plugin.lab.build_e5 import swap_in
    from plugin.search.rerank import RERANKER_MANIFEST, OnnxCrossEncoder

    max_length = hparams["max_length"]
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.train-", dir=dest.parent))
    try:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        fp32 = tmp / "onnx" / "model.onnx"
        export_onnx(tmp, fp32, torch, transformers)
        check_groups = groups[:: max(1, len(groups) // 20)][:20]
        # the exported graph must compute what torch computes
        ce = OnnxCrossEncoder(tmp, max_seq_length=max_length, model_file=fp32, activation="none")
        g = check_groups[0]
        passages = [g.positive, *g.negatives[:7]]
        enc = tok([g.query] * len(passages), passages, truncation=True, max_length=max_length,
                  padding=True, return_tensors="pt")
        with torch.no_grad():
            ref = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits[:, 0]
        export_diff = float(np.max(np.abs(ce.logits(g.query, passages) - ref.numpy())))
        if export_diff > 1e-2:
            raise ModelUnavailable(f"the ONNX export disagrees with torch (max |Δlogit| "
                                   f"{export_diff:.4f}); not saving {dest}")
        int8_default, agreement = write_int8(tmp, check_groups, max_length)
        total_s = time.perf_counter() - t_start
        negatives, pool, depth = hparams["negatives"], hparams["pool"], meta.get("depth")
        manifest = {
            "kind": "cross-encoder", "base_model": base, "base_model_dir": str(base_dir),
            "dataset": meta.get("dataset"), "dataset_name": meta.get("dataset_name"),
            "first_stage": meta.get("first_stage"),
            "negatives_from": f"{meta.get('first_stage')} top {depth} (cross mode), non-relevant, "
                              f"{negatives} sampled per epoch from the top {pool}",
            "split_rule": meta.get("split_rule"), "n_training_queries": len(meta["training_query_ids"]),
            "training_query_ids": meta["training_query_ids"],
            "groups": len(groups), "pairs_per_epoch": len(groups) * (1 + negatives), **hparams,
            "train_loss": [round(x, 4) for x in losses], "trained_on": trained_on,
            "mining_s": meta.get("mining_s"), "training_s": round(train_s, 1),
            "total_s": round(total_s, 1),
            "onnx": {"fp32": "onnx/model.onnx", "export_max_abs_diff": round(export_diff, 6),
                     "int8": "onnx/model_int8.onnx" if int8_default else "onnx/model_int8.disagrees.onnx",
                     "int8_default": int8_default, "int8_check": agreement},
            "torch": torch.__version__, "transformers": transformers.__version__,
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        (tmp / RERANKER_MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        tmp.chmod(0o755)
        swap_in(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {"saved": str(dest), "dataset": meta.get("dataset"), "split_rule": meta.get("split_rule"),
            "training_queries": len(meta["training_query_ids"]), "groups": len(groups),
            "pairs": len(groups) * (1 + negatives) * hparams["epochs"], "epochs": hparams["epochs"],
            "loss": hparams["loss"], "train_loss": manifest["train_loss"], "trained_on": trained_on,
            "mining_s": manifest["mining_s"], "training_s": manifest["training_s"],
            "total_s": manifest["total_s"], "int8_default": int8_default, "int8_check": agreement}
