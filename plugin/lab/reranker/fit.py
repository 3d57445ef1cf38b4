"""Training with torch, on CPU or CUDA (bf16 autocast): the loop, the model it starts from, and
``train-reranker fit`` (groups → trained, exported model folder on this machine).

**Loss.** Listwise softmax cross-entropy over each group of 1 positive + N negatives (the
positive must win its group; Karpukhin-style "localized contrastive" training of rerankers) by
default; ``bce`` (pointwise binary cross-entropy) is kept for comparison.

Needs torch and transformers (``pip install 'factsieve[train]'``), imported when a function runs.
"""
from __future__ import annotations

import logging
import math
import random
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from plugin.errors import ModelUnavailable
from plugin.lab.reranker.export import Prepared, TrainingRecord, base_model_dir, finish, output_dir
from plugin.lab.reranker.groups import EncodedGroup, GroupSource, encode_groups, sample_epoch
from plugin.lab.reranker.options import TRAIN_HINT, TrainOptions

if TYPE_CHECKING:  # the training half runs on boxes with torch but without our API stack
    from plugin.settings import Settings

log = logging.getLogger(__name__)


def load_torch() -> tuple[Any, Any]:
    """``(torch, transformers)``, or the extra to install."""
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise ModelUnavailable(f"training a reranker needs torch and transformers ({exc}): "
                               f"{TRAIN_HINT}") from exc
    return torch, transformers


def resolve_device(torch: Any, device: str = "auto") -> Any:
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ModelUnavailable("--device cuda asked for, but torch sees no CUDA device")
    return torch.device(device)


def collate(pairs: list[tuple[int, ...]], pad_id: int, torch: Any, device: Any) -> tuple[Any, Any]:
    """Token-id pairs as a right-padded ``input_ids`` batch and its attention mask."""
    width = max(len(p) for p in pairs)
    ids = torch.full((len(pairs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(pairs), width), dtype=torch.long)
    for i, p in enumerate(pairs):
        ids[i, :len(p)] = torch.tensor(p, dtype=torch.long)
        mask[i, :len(p)] = 1
    return ids.to(device), mask.to(device)


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
                ids, mask = collate(list(g.pairs[i:i + batch]), pad_id, torch, device)
                with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
                    scores.append(model(input_ids=ids, attention_mask=mask).logits[:, 0].float().cpu())
            s = torch.cat(scores)
            rank = int((s > s[0]).sum()) + 1
            rr.append(1.0 / rank)
            top1.append(rank == 1)
    return {"mrr": round(float(np.mean(rr)), 4), "acc@1": round(float(np.mean(top1)), 4),
            "groups": len(groups)}


def train_epochs(model: Any, groups: list[EncodedGroup], options: TrainOptions, *, pad_id: int,
                 torch: Any, device: Any = None, validation: list[EncodedGroup] | None = None
                 ) -> tuple[list[float], list[dict[str, float]]]:
    """Listwise (or BCE) fine-tuning over pre-encoded groups; on CUDA in bf16 autocast.
    AdamW with linear warm-up (a tenth of the steps) and decay; the pooler and classifier learn
    at ``head_lr_scale`` × ``lr``. Returns the mean loss per epoch and, with ``validation``
    groups, their ``rank_positive`` after each epoch."""
    o = options
    device = device or torch.device("cpu")
    model.to(device)
    rng = random.Random(o.seed)
    per_step = max(1, o.batch_size // (1 + o.negatives))
    total = math.ceil(len(groups) / per_step) * o.epochs
    warmup = max(1, total // 10)
    params = [p for p in model.parameters() if p.requires_grad]
    head = [p for n, p in model.named_parameters() if p.requires_grad
            and (n.startswith("classifier") or ".pooler." in n or n.startswith("pooler"))]
    head_ids = {id(p) for p in head}
    body = [p for p in params if id(p) not in head_ids]
    opt = torch.optim.AdamW([{"params": body, "lr": o.lr}, {"params": head, "lr": o.lr * o.head_lr_scale}],
                            weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warmup, max(0.0, (total - s) / max(1, total - warmup))))
    sizes = [len(g.pairs) - 1 for g in groups]
    losses: list[float] = []
    curve: list[dict[str, float]] = []
    step, t0 = 0, time.perf_counter()
    for epoch in range(o.epochs):
        model.train()
        epoch_losses = []
        for picks in sample_epoch(sizes, per_step, o.negatives, o.pool, rng):
            ids, mask = collate([groups[g].pairs[c] for g, c in picks], pad_id, torch, device)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
                logits = model(input_ids=ids, attention_mask=mask).logits
            logits = logits.float().view(-1, 1 + o.negatives)
            if o.loss == "listwise":
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


def prepare(settings: Settings, options: TrainOptions, *, base: str | None = None,
            threads: int | None = None) -> Prepared:
    """Seed torch, set its CPU threads, and load ``base`` (default: the embedding model) as a
    classifier: ``<s>`` token → pooler → one logit, as sentence-transformers' ``CrossEncoder``
    expects; a zero pooler (the rebuilt e5 folder's) is initialised at random."""
    from plugin.embedding.onnx_backend import default_threads

    torch, transformers = load_torch()
    base_dir = base_model_dir(settings, base)
    torch.manual_seed(options.seed)
    torch.set_num_threads(threads or default_threads())
    transformers.logging.set_verbosity_error()
    tok = transformers.AutoTokenizer.from_pretrained(base_dir, local_files_only=True)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        base_dir, num_labels=1, local_files_only=True)
    freeze(model, torch, freeze_embeddings=options.freeze_embeddings,
           train_layers=options.train_layers, init_pooler=True)
    return Prepared(torch, transformers, base_dir, base or settings.embedding_model, tok, model)


def fit_reranker(settings: Settings, source: GroupSource, out: str | Path | None,
                 options: TrainOptions = TrainOptions(), *, device: str = "auto",
                 threads: int | None = None, base: str | None = None) -> dict[str, Any]:
    """``train-reranker fit``: groups (mined or read), training here, then the model folder
    ``out`` (weights, ONNX, manifest; see ``export.finish``). Returns the JSON summary."""
    dest = output_dir(out, settings)
    source.check()
    torch, _ = load_torch()  # fail before minutes of mining, not after
    dev = resolve_device(torch, device)
    t_start = time.perf_counter()
    groups, meta = source.load(settings)
    prep = prepare(settings, options, base=base, threads=threads)
    encoded = encode_groups(prep.tokenizer, groups, pool=options.pool, max_length=options.max_length)
    t1 = time.perf_counter()
    losses, _ = train_epochs(prep.model, encoded, options, pad_id=prep.tokenizer.pad_token_id,
                             torch=torch, device=dev)
    trained = TrainingRecord(hparams=options.hparams(), losses=losses,
                             train_s=time.perf_counter() - t1, trained_on={"device": str(dev)})
    return finish(prep, groups, meta, dest, trained, t_start=t_start)
