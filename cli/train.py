"""The lab's training commands: train-query-encoder and the train-reranker steps."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plugin.errors import BadInput
from plugin.params import parse_int
from plugin.service.services import Services

from cli.common import dataset_path, dump, split_names

if TYPE_CHECKING:
    from plugin.lab.reranker.groups import GroupSource
    from plugin.lab.reranker.options import MiningOptions, TrainOptions


# -- train-query-encoder -----------------------------------------------------------------------
def cmd_train_query_encoder(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.query_tower import train_query_encoder
    from plugin.learn.train.tower import TowerOptions

    options = TowerOptions(rank=args.rank, layers=args.layers, lr=args.lr, epochs=args.epochs,
                           tau=args.tau, batch_size=args.batch_size, seed=args.seed,
                           interpolate=args.interpolate)
    dump(train_query_encoder(services.settings, dataset_path(args.dataset), args.name, args.out,
                             options, holdout=args.holdout, fold=_fold(args.fold)))
    return 0


def _fold(value: str | None) -> tuple[int, int] | None:
    """``--fold I/K`` as ``(I, K)``."""
    if not value:
        return None
    i, slash, k = value.partition("/")
    if not slash:
        raise BadInput(f"--fold {value!r}: expected I/K, e.g. 0/3")
    # the range is check_fold's (plugin.lab.query_tower): here only what a number is
    return parse_int("--fold I", i, lo=0, hi=10**6), parse_int("--fold K", k, lo=0, hi=10**6)


# -- train-reranker mine|fit|pack|import ---------------------------------------------------------
def _existing(flag: str, path: Path | None) -> Path | None:
    if path is not None and not path.exists():
        raise BadInput(f"{flag} {str(path)!r} not found")
    return path


def _mining(args: argparse.Namespace) -> MiningOptions:
    from plugin.lab.reranker.options import MiningOptions

    return MiningOptions(first_stage=args.first_stage)


def _source(args: argparse.Namespace) -> GroupSource:
    from plugin.lab.reranker.groups import GroupSource

    return GroupSource(dataset=_existing("--dataset", args.dataset),
                       files=tuple(_existing("--groups", f) for f in args.groups or ()), mining=_mining(args))


def _train_options(args: argparse.Namespace) -> TrainOptions:
    from plugin.lab.reranker.options import TrainOptions

    return TrainOptions(epochs=args.epochs, negatives=args.negatives, pool=args.pool,
                        max_length=args.max_length, batch_size=args.batch_size, lr=args.lr,
                        seed=args.seed, loss=args.loss, train_layers=args.train_layers or None)


def cmd_reranker_weak_pairs(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.reranker.weak_pairs import write_weak_pairs

    dump(write_weak_pairs(_existing("--corpus", args.corpus),
                          args.out, parse_int("--per-lang", str(args.per_lang), lo=1, hi=10**6)))
    return 0


def cmd_reranker_gate(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.reranker.gate import measure_gate

    dump(measure_gate(services.settings, args.name, _existing("--adapters", args.adapters), _gate_datasets(args),
                      per_lang=parse_int("--per-lang", str(args.per_lang), lo=1, hi=10**6), write=args.write))
    return 0


def cmd_reranker_cross_rule(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.reranker.gate import measure_cross_rule

    dump(measure_cross_rule(services.settings, args.name, _existing("--adapters", args.adapters), _gate_datasets(args),
                            per_lang=parse_int("--per-lang", str(args.per_lang), lo=1, hi=10**6), write=args.write))
    return 0


def cmd_reranker_skip(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.reranker.skip import measure_skip

    dump(measure_skip(services.settings, args.name, _existing("--adapters", args.adapters), _gate_datasets(args),
                      per_lang=parse_int("--per-lang", str(args.per_lang), lo=1, hi=10**6)))
    return 0


def _gate_datasets(args: argparse.Namespace) -> list[Any]:
    """The datasets of ``gate``, ``cross-rule`` and ``skip``: each ``--dataset`` alone, each ``--mixed``
    with every ``--extra-corpus`` beside it."""
    from plugin.learn.train.datasets import load_dataset, with_extra_corpus

    if not args.dataset and not args.mixed:
        raise BadInput("give --dataset or --mixed: the posts the gate is measured on")
    if args.mixed and not args.extra_corpus:
        raise BadInput("--mixed needs --extra-corpus: the distractors to mix in")
    datasets = [load_dataset(_existing("--dataset", d)) for d in args.dataset]
    for d in args.mixed:
        mixed = load_dataset(_existing("--mixed", d))
        for corpus in args.extra_corpus:
            mixed = with_extra_corpus(mixed, _existing("--extra-corpus", corpus))
        datasets.append(mixed)
    return datasets


def cmd_reranker_mine(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.reranker.groups import export_groups

    dump(export_groups(services.settings, _existing("--dataset", args.dataset), args.out, _mining(args)))
    return 0


def cmd_reranker_fit(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.reranker.fit import fit_reranker

    dump(fit_reranker(services.settings, _source(args), args.out, _train_options(args),
                      device=args.device, threads=args.threads))
    return 0


def cmd_reranker_pack(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.reranker.pack import write_pack

    dump(write_pack(services.settings, _source(args), args.out, _train_options(args)))
    return 0


def cmd_reranker_import(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.reranker.importer import import_weights

    dump(import_weights(services.settings, _source(args), _existing("--weights", args.weights), args.out))
    return 0


def cmd_reranker_lora(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.reranker.lora import train_lora_reranker
    from plugin.learn.train.lora import LoraRerankerOptions

    options = LoraRerankerOptions(rank=args.rank, layers=args.layers, lr=args.lr, head_lr=args.head_lr,
                                  epochs=args.epochs, negatives=args.negatives,
                                  max_length=args.max_length, seed=args.seed)
    dump(train_lora_reranker(services.settings, _source(args), args.name, args.out, options,
                             holdout=args.holdout, fold=_fold(args.fold), warm=args.warm))
    return 0


def cmd_reranker_distil(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.reranker.distil import DistilOptions, train_distilled_reranker

    options = DistilOptions(depth=args.depth, layers=args.layers, rank=args.rank, lr=args.lr,
                            head_lr=args.head_lr, epochs=args.epochs, negatives=args.negatives,
                            max_length=args.max_length, kl_weight=args.kl_weight,
                            mse_weight=args.mse_weight, warm_start=not args.no_warm_start, seed=args.seed)
    dump(train_distilled_reranker(services.settings, _source(args), args.teacher, args.name, args.out,
                                  options.validated(), holdout=args.holdout,
                                  teacher_cache=args.teacher_cache))
    return 0


def cmd_reranker_prior(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.reranker.prior import DEFAULT_PRIORS, gather_heads, prior_grid

    try:
        priors = [float(x) for x in split_names(args.priors)] if args.priors else list(DEFAULT_PRIORS)
    except ValueError:
        raise BadInput(f"--priors {args.priors!r}: expected numbers, e.g. 0,1,2") from None
    if args.top < 1 or any(p < 0 for p in priors):
        raise BadInput("--top must be >= 1 and every prior >= 0")
    heads, meta = gather_heads(services.settings, dataset_path(args.dataset), config=args.config,
                               rerankers=split_names(args.rerankers), encoders=split_names(args.query_encoders),
                               adapters=_existing("--adapters", args.adapters), top=args.top)
    qrels = meta.pop("qrels")
    dump({**meta, **prior_grid(heads, qrels, priors)})
    return 0


def cmd_reranker_lora_pack(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.reranker.lora_pack import write_lora_pack

    dump(write_lora_pack(services.settings, _source(args), args.out,
                         dataset_path=dataset_path(args.folds_dataset or args.dataset),
                         encoders=split_names(args.query_encoders), config=args.config, top=args.top,
                         negatives=args.negatives, max_length=args.max_length))
    return 0


def cmd_reranker_lora_import(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.reranker.lora_pack import import_adapter, sweep_report
    from plugin.lab.reranker.prior import DEFAULT_PRIORS

    folder = _existing("--from", args.source)
    if args.name is None:
        dump(sweep_report(folder, DEFAULT_PRIORS))
        return 0
    if args.groups is None and args.dataset is None:
        raise BadInput("--name needs --groups FILE (or --dataset DIR): the int8 check scores its groups")
    dump(import_adapter(services.settings, _source(args), folder, args.name, args.as_name or args.name,
                        args.out))
    return 0
