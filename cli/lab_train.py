"""The lab's training commands' wiring: train-query-encoder and the train-reranker steps (the
commands themselves live in ``cli.train``)."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from plugin.artefacts import ENCODERS, RERANKERS, written_dir

from cli.common import DEFAULT_DATASET
from cli.train import (cmd_reranker_cross_rule, cmd_reranker_distil, cmd_reranker_fit, cmd_reranker_gate, cmd_reranker_import,
                       cmd_reranker_lora, cmd_reranker_lora_import, cmd_reranker_lora_pack, cmd_reranker_mine,
                       cmd_reranker_pack, cmd_reranker_prior, cmd_reranker_skip, cmd_reranker_weak_pairs,
                       cmd_train_query_encoder)


def _groups_from(sp: argparse.ArgumentParser) -> None:
    """``--dataset DIR`` (mined on the spot) or ``--groups FILE`` (written by ``mine``)."""
    source = sp.add_mutually_exclusive_group(required=True)
    source.add_argument("--dataset", type=Path, metavar="DIR",
                        help="dataset folder: mine its training queries' groups now")
    source.add_argument("--groups", type=Path, metavar="FILE", action="append",
                        help="groups written by `train-reranker mine` (repeatable: trained as one set)")
    _first_stage(sp)


def _first_stage(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--first-stage", default="factsieve", metavar="NAME",
                    help="configuration the hard negatives are mined from (the one the reranker sits behind)")


def _out(sp: argparse.ArgumentParser, kind: str) -> None:
    """``--out DIR`` for an artefact of ``kind``: outside the package (``plugin.artefacts``)."""
    sp.add_argument("--out", type=Path, default=written_dir(kind), metavar="DIR",
                    help=f"folder to write NAME.npz/.json to (default {written_dir(kind)}/)")


def _hyper_parameters(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--epochs", type=int, default=4)
    sp.add_argument("--negatives", type=int, default=7, help="hard negatives per positive per step")
    sp.add_argument("--pool", type=int, default=30, help="negatives are sampled from the first stage's top N")
    sp.add_argument("--max-length", type=int, default=160, help="tokens per (query, passage) pair")
    sp.add_argument("--batch-size", type=int, default=16, help="pairs per step (whole groups)")
    sp.add_argument("--lr", type=float, default=3e-5)
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--loss", default="listwise", help="listwise (softmax over each group) or bce")
    sp.add_argument("--train-layers", type=int, default=4,
                    help="fine-tune only the top N encoder layers (0: all); the pooler and classifier always")


def register_training(sub: Any, add: Any) -> None:
    from plugin.learn.train.tower import TowerOptions

    d = TowerOptions()
    sp = add("train-query-encoder", cmd_train_query_encoder,
             "fine-tune the query side of the embedding model on a dataset's training queries "
             "(a LoRA adapter, CPU, JAX)")
    sp.add_argument("--dataset", type=Path, help=f"dataset folder with a train split (default {DEFAULT_DATASET} when present)")
    sp.add_argument("--name", default="clef2020-e5small-query", help="the adapter's name (a configuration's query_encoder)")
    _out(sp, ENCODERS)
    sp.add_argument("--holdout", action="store_true",
                    help="keep a sha1-chosen slice of the training queries out and score it each epoch; writes nothing")
    sp.add_argument("--fold", metavar="I/K", help="train outside fold I of K (sha1 of the query id): out-of-fold "
                                               "adapters for choosing fusion weights and fitting confidence")
    sp.add_argument("--rank", type=int, default=d.rank)
    sp.add_argument("--layers", type=int, default=d.layers, help="top layers adapted")
    sp.add_argument("--lr", type=float, default=d.lr)
    sp.add_argument("--epochs", type=int, default=d.epochs)
    sp.add_argument("--tau", type=float, default=d.tau, help="softmax temperature")
    sp.add_argument("--batch-size", type=int, default=d.batch_size)
    sp.add_argument("--seed", type=int, default=d.seed)
    sp.add_argument("--interpolate", type=float, default=d.interpolate,
                    help="share of the trained delta served, between the base (0) and the tuned tower (1)")


    help_ = ("fine-tune a cross-encoder reranker on a dataset's training queries: on CPU as a "
             "small adapter (lora, needs factsieve[tune]), or a full fine-tune here or on an "
             "accelerator box (fit, pack, import; need factsieve[train])")
    steps = sub.add_parser("train-reranker", help=help_, description=help_).add_subparsers(
        dest="reranker_command", required=True, metavar="STEP")
    sp = add("weak-pairs", cmd_reranker_weak_pairs,
             "write a dataset of weak pairs (an article's claim → its title) from a corpus of fact-checks "
             "in many languages, to mine and train on", steps)
    sp.add_argument("--corpus", type=Path, required=True, metavar="DIR",
                    help="a folder with factchecks.jsonl (claim and title of each article)")
    sp.add_argument("--out", type=Path, required=True, metavar="DIR", help="the dataset folder to write")
    sp.add_argument("--per-lang", type=int, default=60, metavar="N",
                    help="training pairs kept per language (the rest: dev or spare)")
    for verb, run, what in (
            ("gate", cmd_reranker_gate, "measure where a reranker beats the first stage, per post language and head "
             "kind, on posts it did not train on; --write puts the table in its manifest (the served gate reads it)"),
            ("cross-rule", cmd_reranker_cross_rule, "measure from which reranker probability a head's candidates in "
             "the post's language may move above a first candidate in another language, on the same posts; --write "
             "puts it in the manifest's gate"),
            ("skip", cmd_reranker_skip, "measure from which first-stage confidence a live match may keep its fused "
             "order (reranking changes next to nothing there), on the same posts; the configuration's rerank.skip_at")):
        sp = add(verb, run, what, steps)
        sp.add_argument("--name", required=True, help="the reranker adapter")
        sp.add_argument("--adapters", type=Path, default=written_dir(RERANKERS), metavar="DIR",
                        help=f"the folder with NAME.npz/.json (default {written_dir(RERANKERS)}/)")
        sp.add_argument("--dataset", type=Path, action="append", default=[], metavar="DIR",
                        help="a dataset measured alone (repeatable)")
        sp.add_argument("--mixed", type=Path, action="append", default=[], metavar="DIR",
                        help="a dataset measured with every --extra-corpus beside it (repeatable)")
        sp.add_argument("--extra-corpus", type=Path, action="append", default=[], metavar="DIR",
                        help="distractors in other languages for the --mixed datasets")
        sp.add_argument("--per-lang", type=int, default=60, metavar="N", help="posts per language and dataset")
        if verb != "skip":
            sp.add_argument("--write", action="store_true", help="write what was measured into the adapter's manifest")
    sp = add("mine", cmd_reranker_mine,
             "mine training groups with hard negatives from the first stage into a file (no torch)", steps)
    sp.add_argument("--dataset", type=Path, required=True, metavar="DIR",
                    help="dataset folder (queries with split == train are used)")
    sp.add_argument("--out", type=Path, required=True, metavar="FILE", help="the groups file to write")
    _first_stage(sp)

    sp = add("fit", cmd_reranker_fit,
             "train here (CPU or CUDA) and write the model folder with its ONNX export", steps)
    _groups_from(sp)
    sp.add_argument("--out", required=True, metavar="NAME|DIR",
                    help="NAME (under the model cache's rerankers/) or a folder")
    _hyper_parameters(sp)
    sp.add_argument("--device", default="auto", help="auto (CUDA when torch sees one), cpu or cuda")
    sp.add_argument("--threads", type=int, help="torch CPU threads (default: the CPUs this process may use)")

    from plugin.learn.train.lora import LoraRerankerOptions

    d2 = LoraRerankerOptions()
    sp = add("lora", cmd_reranker_lora,
             "train here on CPU (JAX, no torch): LoRA on the top encoder layers plus a head, written "
             "as a small adapter that `factsieve model build` turns into the ONNX reranker", steps)
    _groups_from(sp)
    sp.add_argument("--name", default="clef2020-e5small-lora",
                    help="the reranker's name (a configuration's rerank.model is rerankers/NAME)")
    _out(sp, RERANKERS)
    sp.add_argument("--holdout", action="store_true",
                    help="keep a sha1-chosen slice of the training queries out and score it each epoch; writes nothing")
    sp.add_argument("--fold", metavar="I/K", help="train outside fold I of K (sha1 of the query id) and write the "
                                               "adapter: out-of-fold scores for choosing the rerank blend")
    sp.add_argument("--warm", metavar="NAME",
                    help="start from this committed reranker adapter: its deltas below --layers frozen "
                         "and kept, its top deltas and head trained further")
    sp.add_argument("--rank", type=int, default=d2.rank)
    sp.add_argument("--layers", type=int, default=d2.layers, help="top layers adapted")
    sp.add_argument("--lr", type=float, default=d2.lr, help="the LoRA deltas' learning rate")
    sp.add_argument("--head-lr", type=float, default=d2.head_lr, help="the pooler's and classifier's")
    sp.add_argument("--epochs", type=int, default=d2.epochs)
    sp.add_argument("--negatives", type=int, default=d2.negatives, help="hard negatives per group")
    sp.add_argument("--max-length", type=int, default=d2.max_length, help="tokens per (post, fact-check) pair")
    sp.add_argument("--seed", type=int, default=d2.seed)

    from plugin.lab.reranker.distil import DistilOptions

    d3 = DistilOptions()
    sp = add("distil", cmd_reranker_distil,
             "train a shallower student of a committed reranker here on CPU (JAX): the encoder's first "
             "--depth layers with LoRA and a head, fitted to the teacher's logits on the training groups", steps)
    _groups_from(sp)
    sp.add_argument("--teacher", required=True, metavar="NAME", help="the committed reranker adapter to distil")
    sp.add_argument("--depth", type=int, required=True, metavar="D", help="encoder layers the student runs (its first D)")
    sp.add_argument("--name", help="the student's name (default: TEACHER-distilD)")
    _out(sp, RERANKERS)
    sp.add_argument("--holdout", action="store_true",
                    help="keep a sha1-chosen slice of the training queries out and score it each epoch; writes nothing")
    sp.add_argument("--layers", type=int, default=d3.layers,
                    help="top layers of the student adapted, the ones below frozen as the teacher's (0: all D)")
    sp.add_argument("--rank", type=int, default=d3.rank)
    sp.add_argument("--lr", type=float, default=d3.lr, help="the LoRA deltas' learning rate")
    sp.add_argument("--head-lr", type=float, default=d3.head_lr, help="the pooler's and classifier's")
    sp.add_argument("--epochs", type=int, default=d3.epochs)
    sp.add_argument("--negatives", type=int, default=d3.negatives, help="hard negatives per group")
    sp.add_argument("--max-length", type=int, default=d3.max_length, help="tokens per (post, fact-check) pair")
    sp.add_argument("--kl-weight", type=float, default=d3.kl_weight, help="listwise KL to the teacher's softmax")
    sp.add_argument("--mse-weight", type=float, default=d3.mse_weight, help="squared error to the teacher's logits")
    sp.add_argument("--no-warm-start", action="store_true", help="start the student's deltas at zero, not the teacher's")
    sp.add_argument("--teacher-cache", type=Path, metavar="DIR",
                    help="folder for the teacher's logits, reused by a rerun on the same pairs (default: the temp folder)")
    sp.add_argument("--seed", type=int, default=d3.seed)

    sp = add("prior", cmd_reranker_prior,
             "choose a configuration's rerank.rank_prior out of fold: each fold of the training "
             "posts ranked by a query tower and a reranker trained outside it (--fold I/K)", steps)
    sp.add_argument("--dataset", type=Path, help=f"dataset folder with a train split (default {DEFAULT_DATASET} when present)")
    sp.add_argument("--adapters", type=Path, required=True, metavar="DIR",
                    help="the folder `train-reranker lora --fold I/K --out DIR` wrote the fold rerankers to")
    sp.add_argument("--rerankers", required=True, metavar="NAME,NAME,...", help="the fold rerankers, fold 0 first")
    sp.add_argument("--query-encoders", required=True, metavar="NAME,NAME,...",
                    help="the fold query towers of the same folds, in FACTSIEVE_QUERY_ADAPTER_DIR")
    sp.add_argument("--config", default="factsieve", help="the first stage (its query_encoder is replaced per fold)")
    sp.add_argument("--top", type=int, default=10, help="candidates reranked, as the configuration's rerank.top")
    sp.add_argument("--priors", help="priors to score, e.g. 0,1,2 (default: 0 to 6)")

    sp = add("lora-pack", cmd_reranker_lora_pack,
             "write what scripts/train_lora_remote.py needs to train a sweep of LoRA rerankers on an "
             "accelerator box: the pruned base model, the groups and each fold's first-stage candidates", steps)
    _groups_from(sp)
    sp.add_argument("--dataset-for-folds", dest="folds_dataset", type=Path, metavar="DIR",
                    help=f"dataset the fold candidates come from (default {DEFAULT_DATASET} when present)")
    sp.add_argument("--query-encoders", required=True, metavar="NAME,NAME,...",
                    help="fold query towers (train-query-encoder --fold I/K), fold 0 first, in FACTSIEVE_QUERY_ADAPTER_DIR")
    sp.add_argument("--config", default="factsieve", help="the first stage (its query_encoder is replaced per fold)")
    sp.add_argument("--top", type=int, default=10, help="candidates per post, as the configuration's rerank.top")
    sp.add_argument("--negatives", type=int, default=49, help="hard negatives per group kept in the pack")
    sp.add_argument("--max-length", type=int, default=d2.max_length)
    sp.add_argument("--out", type=Path, required=True, metavar="FILE", help="the pack to write (.npz)")

    sp = add("lora-import", cmd_reranker_lora_import,
             "read what scripts/train_lora_remote.py wrote: the sweep's out-of-fold scores, or (--name) "
             "one adapter written as a reranker adapter (--out)", steps)
    sp.add_argument("--from", dest="source", type=Path, required=True, metavar="DIR")
    sp.add_argument("--name", help="the sweep entry to import (without it: the sweep's report)")
    sp.add_argument("--as", dest="as_name", metavar="NAME", help="the reranker's name (default: --name)")
    _out(sp, RERANKERS)
    source = sp.add_mutually_exclusive_group()
    source.add_argument("--groups", type=Path, metavar="FILE", help="the groups the int8 check scores")
    source.add_argument("--dataset", type=Path, metavar="DIR", help="or mine them from this dataset")
    _first_stage(sp)

    sp = add("pack", cmd_reranker_pack,
             "write a torch-only training bundle for an accelerator box "
             "(scripts/train_reranker_remote.py trains it)", steps)
    _groups_from(sp)
    sp.add_argument("--out", type=Path, required=True, metavar="FILE", help="the bundle to write")
    _hyper_parameters(sp)

    sp = add("import", cmd_reranker_import,
             "finish the model folder from weights trained from a pack", steps)
    _groups_from(sp)
    sp.add_argument("--weights", type=Path, required=True, metavar="DIR",
                    help="what scripts/train_reranker_remote.py wrote (weights-*.pt, train_summary.json)")
    sp.add_argument("--out", required=True, metavar="NAME|DIR",
                    help="NAME (under the model cache's rerankers/) or a folder")
