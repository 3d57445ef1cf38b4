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
``hybrid-rrf`` configuration in crosslingual mode over the dataset's evaluation index, taking the
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
from types import SimpleNamespace
from typing import Any

import numpy as np

from .errors import BadInput, ModelUnavailable
from .rerank import RERANKER_MANIFEST, RERANKERS_DIR, OnnxCrossEncoder
from .settings import Settings

log = logging.getLogger(__name__)

TRAIN_HINT = "pip install 'factsieve[train]'"
#: The first stage negatives are mined from (and the reranker is meant to sit behind).
FIRST_STAGE = "hybrid-rrf"
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


def passage_text(source: dict[str, Any]) -> str:
    """A fact-check as ``Matcher`` gives it to the reranker (title + claim)."""
    from .matcher import _passage

    return _passage(SimpleNamespace(source=source))  # type: ignore[arg-type]


# -- hard negatives -------------------------------------------------------------------------------
def mine_groups(matcher: Any, store: Any, alias: str, queries: list[dict[str, Any]],
                qrels: dict[str, set[str]], train_ids: list[str], *, depth: int = 50
                ) -> list[TrainingGroup]:
    """Run the first stage for every training query; one group per (query, relevant fact-check)."""
    from .matcher import MatchRequest
    from .models import Mode
    from .normalize import normalize_post

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
        negatives = tuple(passage_text(m) for m in result.matches if m["id"] not in relevant)
        text = normalize_post(q["text"]) or q["text"].strip()
        for doc_id in sorted(relevant):
            if doc_id not in positives:
                src = store.find(alias, doc_id)
                positives[doc_id] = passage_text(src) if src else None
            if positives[doc_id] is None:
                log.warning("query %s: relevant fact-check %s is not in %s", qid, doc_id, alias)
                continue
            groups.append(TrainingGroup(qid, text, positives[doc_id], negatives))
    return groups


# -- training -------------------------------------------------------------------------------------
def _torch() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise ModelUnavailable(f"training a reranker needs torch and transformers ({exc}): "
                               f"{TRAIN_HINT}") from exc
    return torch, transformers


def _batches(groups: list[TrainingGroup], per_step: int, negatives: int, pool: int,
             rng: random.Random) -> list[tuple[list[str], list[str]]]:
    """One epoch: shuffled groups, ``negatives`` sampled from each group's top ``pool``
    (padded by repetition when the first stage returned fewer)."""
    order = list(range(len(groups)))
    rng.shuffle(order)
    out = []
    for start in range(0, len(order), per_step):
        queries, passages = [], []
        for i in order[start:start + per_step]:
            g = groups[i]
            cands = list(g.negatives[:pool])
            picked = rng.sample(cands, negatives) if len(cands) >= negatives else \
                [cands[j % len(cands)] for j in range(negatives)]
            queries += [g.query] * (1 + negatives)
            passages += [g.positive, *picked]
        out.append((queries, passages))
    return out


def _fit(model: Any, tok: Any, groups: list[TrainingGroup], *, epochs: int, negatives: int,
         pool: int, max_length: int, batch_size: int, lr: float, seed: int, loss_kind: str,
         torch: Any, head_lr_scale: float = 10.0) -> list[float]:
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
    losses: list[float] = []
    model.train()
    step, t0 = 0, time.perf_counter()
    for epoch in range(epochs):
        epoch_losses = []
        for queries, passages in _batches(groups, per_step, negatives, pool, rng):
            enc = tok(queries, passages, truncation=True, max_length=max_length, padding=True,
                      return_tensors="pt")
            logits = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]
                           ).logits.view(-1, 1 + negatives)
            if loss_kind == "listwise":
                target = torch.zeros(logits.shape[0], dtype=torch.long)
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
    model.eval()
    return losses


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
    from .embedding.build_e5 import quantize_int8

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
    text = str(out)
    if not text or text in (".", ".."):
        raise BadInput(f"--out must name a model or a folder, got {text!r}")
    if os.sep in text or text.startswith(("~", ".")):
        return Path(text).expanduser()
    return settings.model_cache_dir / RERANKERS_DIR / text


def base_model_dir(settings: Settings, base: str | None = None) -> Path:
    """The encoder to start from: ``base`` or the configured embedding model, as a local folder."""
    from .embedding import TEST_MODEL, rebuilt_model_dir

    name = base or settings.embedding_model
    folder = rebuilt_model_dir(settings) if name == TEST_MODEL else Path(name).expanduser()
    if not (folder / "config.json").is_file():
        raise ModelUnavailable(f"the base model {name!r} is not a local folder with config.json "
                               f"({folder}); run `factsieve model build` or pass a folder")
    return folder


def train_reranker(settings: Settings, dataset_path: Path, out: str | Path, *, epochs: int = 2,
                   negatives: int = 7, pool: int = 30, depth: int = 50, max_length: int = 160,
                   batch_size: int = 16, lr: float = 3e-5, seed: int = 0, loss: str = "listwise",
                   threads: int | None = None, base: str | None = None,
                   freeze_embeddings: bool = True, train_layers: int | None = 4,
                   head_lr_scale: float = 10.0, max_queries: int | None = None) -> dict[str, Any]:
    """Mine, train, save, export; returns the JSON summary the command prints.

    ``train_layers`` fine-tunes only the top N encoder layers (None: all of them) plus the
    pooler and classifier, which learn at ``head_lr_scale`` × ``lr`` (they start from random).
    ``max_queries`` keeps only the first N training queries (smoke runs, tuning slices)."""
    if loss not in LOSSES:
        raise BadInput(f"unknown loss {loss!r}; valid: {', '.join(LOSSES)}")
    for flag, value in (("--epochs", epochs), ("--negatives", negatives), ("--batch-size", batch_size)):
        if value < 1:
            raise BadInput(f"{flag} must be >= 1, got {value}")
    if not 16 <= max_length <= 512:
        raise BadInput(f"--max-length must be between 16 and 512, got {max_length}")
    torch, transformers = _torch()
    from .embedding import load_embedder
    from .embedding.onnx_backend import default_threads
    from .evaluate.run import ensure_dataset_index, load_dataset
    from .matcher import Matcher
    from .store import Store

    t_start = time.perf_counter()
    dest = output_dir(out, settings)
    base_dir = base_model_dir(settings, base)
    dataset = load_dataset(dataset_path)
    train_ids, rule = training_query_ids(dataset.queries)
    if max_queries is not None:
        train_ids = train_ids[:max_queries]
    train_set = set(train_ids)
    queries = [q for q in dataset.queries if str(q["id"]) in train_set]  # nothing else passes here

    store, embedder = Store(settings), load_embedder(settings)
    alias, _ = ensure_dataset_index(store, embedder, dataset, settings)
    matcher = Matcher(store, embedder, settings, alias=alias, config=FIRST_STAGE)
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

    torch.manual_seed(seed)
    torch.set_num_threads(threads or default_threads())
    transformers.logging.set_verbosity_error()
    tok = transformers.AutoTokenizer.from_pretrained(base_dir, local_files_only=True)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        base_dir, num_labels=1, local_files_only=True)
    pooler = model.bert.pooler.dense if hasattr(model, "bert") else None
    if pooler is not None and not bool(pooler.weight.detach().abs().sum()):
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

    t1 = time.perf_counter()
    losses = _fit(model, tok, groups, epochs=epochs, negatives=negatives, pool=pool,
                  max_length=max_length, batch_size=batch_size, lr=lr, seed=seed, loss_kind=loss,
                  torch=torch, head_lr_scale=head_lr_scale)
    train_s = time.perf_counter() - t1

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
        manifest = {
            "kind": "cross-encoder", "base_model": settings.embedding_model if base is None else base,
            "base_model_dir": str(base_dir), "dataset": str(dataset.path), "dataset_name": dataset.name,
            "first_stage": FIRST_STAGE, "negatives_from": f"{FIRST_STAGE} top {depth} (cross mode), "
            f"non-relevant, {negatives} sampled per epoch from the top {pool}",
            "split_rule": rule, "n_training_queries": len(train_ids),
            "training_query_ids": sorted(train_ids, key=lambda s: (len(s), s)),
            "groups": len(groups), "pairs_per_epoch": len(groups) * (1 + negatives),
            "epochs": epochs, "negatives": negatives, "pool": pool, "max_length": max_length,
            "batch_size": batch_size, "lr": lr, "seed": seed, "loss": loss,
            "freeze_embeddings": freeze_embeddings, "train_layers": train_layers,
            "head_lr_scale": head_lr_scale, "train_loss": [round(x, 4) for x in losses],
            "mining_s": round(mining_s, 1), "training_s": round(train_s, 1), "total_s": round(total_s, 1),
            "onnx": {"fp32": "onnx/model.onnx", "export_max_abs_diff": round(export_diff, 6),
                     "int8": "onnx/model_int8.onnx" if int8_default else "onnx/model_int8.disagrees.onnx",
                     "int8_default": int8_default, "int8_check": agreement},
            "torch": torch.__version__, "transformers": transformers.__version__,
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        (tmp / RERANKER_MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        tmp.chmod(0o755)
        if dest.exists():
            old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
            os.replace(dest, old)
            os.replace(tmp, dest)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {"saved": str(dest), "dataset": str(dataset.path), "split_rule": rule,
            "training_queries": len(train_ids), "groups": len(groups),
            "pairs": len(groups) * (1 + negatives) * epochs, "epochs": epochs, "loss": loss,
            "train_loss": manifest["train_loss"], "mining_s": manifest["mining_s"],
            "training_s": manifest["training_s"], "total_s": manifest["total_s"],
            "int8_default": int8_default, "int8_check": agreement}
