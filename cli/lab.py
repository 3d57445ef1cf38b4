"""The lab's commands: evaluation, benchmarks, reranker training. Tools, not the service."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plugin.errors import BadInput
from plugin.params import parse_int
from plugin.service.services import Services

from cli.common import DEFAULT_DATASET, dataset_path, dump

if TYPE_CHECKING:
    from plugin.lab.reranker.groups import GroupSource
    from plugin.lab.reranker.options import MiningOptions, TrainOptions
    from plugin.search.retrieval import RetrievalConfig


def select_configs(path: Path | None, names: str | None) -> dict[str, RetrievalConfig]:
    """The configurations of ``path`` (default: the packaged file) named by ``--config
    NAME[,NAME...]``, in that order; all of them without names. An unknown name is refused with
    the known ones, by every command that takes ``--config``."""
    from plugin.search.retrieval import load_configs

    configs = load_configs(path)
    if not names:
        return configs
    wanted = [c.strip() for c in names.split(",") if c.strip()]
    unknown = [c for c in wanted if c not in configs]
    if unknown:
        raise BadInput(f"unknown configuration(s) {unknown}; known: {', '.join(configs)}")
    return {c: configs[c] for c in wanted}


FUSION_PATHS = {"settings": None, "client": ("client",), "server": ("server",), "both": ("client", "server")}


def by_fusion(args: argparse.Namespace, services: Services, configs: dict[str, RetrievalConfig],
              run: Any) -> dict[str, Any]:
    """``run(settings)`` on each fusion path ``--fusion`` asks for, on the same index and
    queries. One path: its result with ``"fusion"`` naming it; ``both``: ``{"client": …,
    "server": …}``. The server path needs neural-search, and installs the configurations'
    pipelines first (as ``factsieve init`` does): a match never writes one."""
    paths = FUSION_PATHS[args.fusion]
    if paths is None:
        return {**run(services.settings), "fusion": "server" if services.settings.server_fusion else "client"}
    if "server" in paths:
        from plugin.search.hybrid import NEURAL_PLUGIN

        if NEURAL_PLUGIN not in services.store.plugins():
            raise BadInput("--fusion server needs the neural-search plugin on the cluster "
                           "(`make up` installs it; the official Docker image ships it)")
        services.install_search_pipelines(list(configs.values()))
    results = {p: {**run(services.settings.model_copy(update={"server_fusion": p == "server"})),
                   "fusion": p} for p in paths}
    return results[paths[0]] if len(paths) == 1 else results


def add_fusion_flag(sp: Any) -> None:
    sp.add_argument("--fusion", choices=list(FUSION_PATHS), default="settings",
                    help="client (_msearch + fusion here), server (hybrid query + neural-search pipeline), "
                         "both (side by side), or settings (FACTSIEVE_SERVER_FUSION; the default)")


def _table(result: dict[str, Any]) -> str:
    if "configs" not in result:  # --fusion both
        return "\n\n".join(f"fusion: {path}\n{_table(r)}" for path, r in result.items())
    cols = ["S@1", "S@5", "S@10", "MAP@5", "MRR@10", "R@100"]
    lines = [f"{result['dataset']}  ({result['n_queries']} queries, {result['split']}, "
             f"{result['n_factchecks']} fact-checks)",
             f"{'config':<16}{'mode':<7}" + "".join(f"{c:>8}" for c in cols) + f"{'p50 ms':>9}{'p95 ms':>9}"]
    for name, per_mode in result["configs"].items():
        for mode, m in per_mode.items():
            lines.append(f"{name:<16}{mode:<7}" + "".join(f"{m[c]:>8.3f}" for c in cols)
                         + f"{m['latency_ms']['p50']:>9.1f}{m['latency_ms']['p95']:>9.1f}")
    for name, why in result["skipped"].items():
        lines.append(f"{name:<16}skipped: {why}")
    return "\n".join(lines)


def cmd_evaluate(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.evaluate.run import evaluate, load_dataset
    from plugin.search.rerank import load_rerankers

    settings = services.settings
    dataset = load_dataset(dataset_path(args.dataset, " (factchecks.jsonl, queries.jsonl, qrels.jsonl)"))
    configs = select_configs(args.configs_file, args.config)
    rerankers = load_rerankers(configs, settings)
    generate = None
    if settings.llm_url:
        from plugin.search.generated import LLMVariants

        generate = LLMVariants(services.llm)
    if args.record and args.fusion == "both":
        raise BadInput("--record takes one fusion path: --fusion client or server")
    result = by_fusion(args, services, configs, lambda s: evaluate(
        services.store, services.embedder, s, dataset, configs, mode=args.mode, use_dates=args.dates,
        rerankers=rerankers, rebuild=args.rebuild, generate=generate,
        splits=args.split.split(",") if args.split else None))
    if args.record:
        from datetime import date

        from plugin.lab.evaluate.records import write_scores

        write_scores(args.records, result, on=date.today().isoformat())
    if args.table:
        print(_table(result))
    else:
        dump(result)
    return 0


def cmd_tune(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.evaluate.cv import tune
    from plugin.lab.evaluate.run import load_dataset

    dataset = load_dataset(dataset_path(args.dataset))
    config = next(iter(select_configs(args.configs_file, args.config).values()))
    baselines = select_configs(args.configs_file, args.baseline) if args.baseline else {}
    try:
        values = [float(v) for v in args.values.split(",") if v.strip()]
    except ValueError:
        raise BadInput(f"--values takes numbers separated by commas, got {args.values!r}") from None
    try:
        dump(tune(services.store, services.embedder, services.settings, dataset, config, args.param,
                  values, modes=[m.strip() for m in args.mode.split(",") if m.strip()],
                  baselines=baselines, folds=args.folds, repeats=args.repeats))
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    return 0


def cmd_calibrate(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.calibrate import calibrate
    from plugin.lab.evaluate.run import load_dataset
    from plugin.models import Mode
    from plugin.search.calibration import calibrator_path

    dataset = load_dataset(dataset_path(args.dataset))
    config = next(iter(select_configs(args.configs_file, args.config).values()))
    checks = [load_dataset(dataset_path(p)) for p in args.check or []]
    try:
        dump(calibrate(services.store, services.embedder, services.settings, dataset, config,
                       out=args.out or calibrator_path(config.name), mode=Mode.parse(args.mode),
                       checks=checks, cross_fit=[c.strip() for c in (args.cross_fit or "").split(",") if c.strip()]))
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    return 0


def cmd_bench(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.bench import bench
    from plugin.lab.evaluate.run import load_dataset
    from plugin.models import Mode

    from plugin.search.rerank import load_rerankers

    sizes = [parse_int("--docs", x, lo=1, hi=10**9) for x in _names(args.docs)] if args.docs else []
    configs = select_configs(args.configs_file, args.config)
    dataset = load_dataset(dataset_path(args.dataset))
    rerankers = load_rerankers(configs, services.settings)
    result = by_fusion(args, services, configs, lambda s: bench(
        services.store, services.embedder, s, dataset, configs, sizes=sizes,
        concurrency=args.concurrency, n_queries=args.queries, seconds=args.seconds,
        mode=Mode.parse(args.mode),
        # once: with --fusion both, on the client run only
        hosted=args.hosted and not (args.fusion == "both" and s.server_fusion), rerankers=rerankers))
    dump(result)
    return 0


# -- train-query-encoder -----------------------------------------------------------------------
def cmd_train_query_encoder(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.query_tower import TowerOptions, train_query_encoder

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
                       file=_existing("--groups", args.groups), mining=_mining(args))


def _train_options(args: argparse.Namespace) -> TrainOptions:
    from plugin.lab.reranker.options import TrainOptions

    return TrainOptions(epochs=args.epochs, negatives=args.negatives, pool=args.pool,
                        max_length=args.max_length, batch_size=args.batch_size, lr=args.lr,
                        seed=args.seed, loss=args.loss, train_layers=args.train_layers or None)


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
    from plugin.lab.reranker.lora import LoraRerankerOptions, train_lora_reranker

    options = LoraRerankerOptions(rank=args.rank, layers=args.layers, lr=args.lr, head_lr=args.head_lr,
                                  epochs=args.epochs, negatives=args.negatives,
                                  max_length=args.max_length, seed=args.seed)
    dump(train_lora_reranker(services.settings, _source(args), args.name, args.out, options,
                             holdout=args.holdout, fold=_fold(args.fold)))
    return 0


def _names(value: str) -> list[str]:
    """A comma-separated flag's items."""
    return [x.strip() for x in value.split(",") if x.strip()]


def cmd_reranker_prior(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.reranker.prior import DEFAULT_PRIORS, gather_heads, prior_grid

    try:
        priors = [float(x) for x in _names(args.priors)] if args.priors else list(DEFAULT_PRIORS)
    except ValueError:
        raise BadInput(f"--priors {args.priors!r}: expected numbers, e.g. 0,1,2") from None
    if args.top < 1 or any(p < 0 for p in priors):
        raise BadInput("--top must be >= 1 and every prior >= 0")
    heads, meta = gather_heads(services.settings, dataset_path(args.dataset), config=args.config,
                               rerankers=_names(args.rerankers), encoders=_names(args.query_encoders),
                               adapters=_existing("--adapters", args.adapters), top=args.top)
    qrels = meta.pop("qrels")
    dump({**meta, **prior_grid(heads, qrels, priors)})
    return 0


def cmd_reranker_lora_pack(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.reranker.lora_pack import write_lora_pack

    dump(write_lora_pack(services.settings, _source(args), args.out,
                         dataset_path=dataset_path(args.folds_dataset or args.dataset),
                         encoders=_names(args.query_encoders), config=args.config, top=args.top,
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


def _groups_from(sp: argparse.ArgumentParser) -> None:
    """``--dataset DIR`` (mined on the spot) or ``--groups FILE`` (written by ``mine``)."""
    source = sp.add_mutually_exclusive_group(required=True)
    source.add_argument("--dataset", type=Path, metavar="DIR",
                        help="dataset folder: mine its training queries' groups now")
    source.add_argument("--groups", type=Path, metavar="FILE", help="groups written by `train-reranker mine`")
    _first_stage(sp)


def _first_stage(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--first-stage", default="factsieve", metavar="NAME",
                    help="configuration the hard negatives are mined from (the one the reranker sits behind)")


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


def register(sub: Any, add: Any) -> None:
    from plugin.lab.evaluate.records import DEFAULT_RECORDS

    sp = add("evaluate", cmd_evaluate, "run named retrieval configurations over a dataset and print metrics")
    add_fusion_flag(sp)
    sp.add_argument("--dataset", type=Path, help=f"dataset folder (default {DEFAULT_DATASET} when present)")
    sp.add_argument("--config", help="NAME[,NAME...] (default: every configuration)")
    sp.add_argument("--configs-file", type=Path, help="a retrieval configuration file (default: the packaged one)")
    sp.add_argument("--mode", help="mono|cross|auto|both (default: both for datasets with crosslingual pairs, else mono)")
    sp.add_argument("--dates", action="store_true", help="only fact-checks published on or before each query's date")
    sp.add_argument("--split", help="SPLIT[,SPLIT...]: score only these query splits (CLEF-2020: dev,test)")
    sp.add_argument("--rebuild", action="store_true", help="re-index the dataset even if an index exists")
    sp.add_argument("--record", action="store_true",
                    help="record the scores in the records file (per configuration, dataset, query split and mode)")
    sp.add_argument("--records", type=Path, default=DEFAULT_RECORDS, metavar="FILE",
                    help="the records file --record writes (default: records/retrieval.json in the current directory)")
    sp.add_argument("--table", action="store_true", help="print a table instead of JSON")

    sp = add("tune", cmd_tune, "one configuration parameter over a grid, cross-validated on a dataset's queries")
    sp.add_argument("--dataset", type=Path, help=f"dataset folder (default {DEFAULT_DATASET} when present)")
    sp.add_argument("--config", required=True, metavar="NAME", help="the configuration to vary")
    sp.add_argument("--configs-file", type=Path, help="a retrieval configuration file (default: the packaged one)")
    sp.add_argument("--param", required=True, help="a numeric configuration field, e.g. language_centering")
    sp.add_argument("--values", required=True, help="V[,V...]: the grid")
    sp.add_argument("--mode", default="auto", help="auto,cross,mono (comma-separated; default auto)")
    sp.add_argument("--baseline", metavar="NAME[,NAME...]", help="configurations scored on the same queries")
    sp.add_argument("--folds", type=int, default=5)
    sp.add_argument("--repeats", type=int, default=10, help="shuffles of the folds")

    sp = add("calibrate", cmd_calibrate, "fit a configuration's confidence model on a dataset's training queries")
    sp.add_argument("--dataset", type=Path, help=f"dataset folder with a train split (default {DEFAULT_DATASET} when present)")
    sp.add_argument("--config", default="factsieve", metavar="NAME")
    sp.add_argument("--configs-file", type=Path, help="a retrieval configuration file (default: the packaged one)")
    sp.add_argument("--mode", default="auto", help="the matching mode the model is fitted in (default auto, as served)")
    sp.add_argument("--check", type=Path, action="append", metavar="DIR",
                    help="another dataset to measure the fit on (repeatable)")
    sp.add_argument("--out", type=Path, help="where to write it (default: the packaged plugin/search/calibration/NAME.json)")
    sp.add_argument("--cross-fit", metavar="NAME[,NAME...]",
                    help="fold adapters (train-query-encoder --fold) to run the training queries with, "
                         "for a configuration whose query encoder saw them")

    from plugin.lab.query_tower import TowerOptions

    d = TowerOptions()
    sp = add("train-query-encoder", cmd_train_query_encoder,
             "fine-tune the query side of the embedding model on a dataset's training queries "
             "(a LoRA adapter, CPU, JAX)")
    sp.add_argument("--dataset", type=Path, help=f"dataset folder with a train split (default {DEFAULT_DATASET} when present)")
    sp.add_argument("--name", default="clef2020-e5small-query", help="the adapter's name (a configuration's query_encoder)")
    sp.add_argument("--out", type=Path, help="folder to write NAME.npz/.json to (default: the packaged plugin/search/encoders/)")
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

    sp = add("bench", cmd_bench, "latency, throughput, ingest rate and memory per configuration and corpus size")
    add_fusion_flag(sp)
    sp.add_argument("--dataset", type=Path, help=f"dataset folder (default {DEFAULT_DATASET} when present)")
    sp.add_argument("--config", help="NAME[,NAME...] (default: every configuration; a reranking one within the live "
                         "rerank budget, FACTSIEVE_RERANK_BUDGET_MS)")
    sp.add_argument("--configs-file", type=Path, help="a retrieval configuration file (default: the packaged one)")
    sp.add_argument("--docs", help="scaled synthetic corpus sizes, e.g. 100000,1000000")
    sp.add_argument("--concurrency", type=int, default=2)
    sp.add_argument("--queries", type=int, default=200, help="queries for the latency run")
    sp.add_argument("--seconds", type=float, default=20.0, help="duration of the throughput run")
    sp.add_argument("--mode", default="auto")
    sp.add_argument("--hosted", action="store_true",
                    help="also the stored template factsieve-match over plain HTTP, and ingest docs/s "
                         "embedded here vs by the hosted model's ingest pipeline (needs `factsieve init`)")

    help_ = ("fine-tune a cross-encoder reranker on a dataset's training queries: on CPU as a "
             "small adapter (lora, needs factsieve[tune]), or a full fine-tune here or on an "
             "accelerator box (fit, pack, import; need factsieve[train])")
    steps = sub.add_parser("train-reranker", help=help_, description=help_).add_subparsers(
        dest="reranker_command", required=True, metavar="STEP")
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

    from plugin.lab.reranker.lora import LoraRerankerOptions

    d2 = LoraRerankerOptions()
    sp = add("lora", cmd_reranker_lora,
             "train here on CPU (JAX, no torch): LoRA on the top encoder layers plus a head, written "
             "as a small adapter that `factsieve model build` turns into the ONNX reranker", steps)
    _groups_from(sp)
    sp.add_argument("--name", default="clef2020-e5small-lora",
                    help="the reranker's name (a configuration's rerank.model is rerankers/NAME)")
    sp.add_argument("--out", type=Path, help="folder to write NAME.npz/.json to (default: the packaged plugin/search/rerankers/)")
    sp.add_argument("--holdout", action="store_true",
                    help="keep a sha1-chosen slice of the training queries out and score it each epoch; writes nothing")
    sp.add_argument("--fold", metavar="I/K", help="train outside fold I of K (sha1 of the query id) and write the "
                                               "adapter: out-of-fold scores for choosing the rerank blend")
    sp.add_argument("--rank", type=int, default=d2.rank)
    sp.add_argument("--layers", type=int, default=d2.layers, help="top layers adapted")
    sp.add_argument("--lr", type=float, default=d2.lr, help="the LoRA deltas' learning rate")
    sp.add_argument("--head-lr", type=float, default=d2.head_lr, help="the pooler's and classifier's")
    sp.add_argument("--epochs", type=int, default=d2.epochs)
    sp.add_argument("--negatives", type=int, default=d2.negatives, help="hard negatives per group")
    sp.add_argument("--max-length", type=int, default=d2.max_length, help="tokens per (post, fact-check) pair")
    sp.add_argument("--seed", type=int, default=d2.seed)

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
             "one adapter written as a committed reranker", steps)
    sp.add_argument("--from", dest="source", type=Path, required=True, metavar="DIR")
    sp.add_argument("--name", help="the sweep entry to import (without it: the sweep's report)")
    sp.add_argument("--as", dest="as_name", metavar="NAME", help="the reranker's name (default: --name)")
    sp.add_argument("--out", type=Path, help="folder to write to (default: the packaged plugin/search/rerankers/)")
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
