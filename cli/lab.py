"""The lab's commands: evaluation, benchmarks, reranker training. Tools, not the service."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from plugin.errors import BadInput
from plugin.service.services import Services

from cli.common import DEFAULT_DATASET, dataset_path, dump


def _table(result: dict[str, Any]) -> str:
    cols = ["S@1", "S@5", "S@10", "MAP@5", "MRR@10", "R@100"]
    lines = [f"{result['dataset']}  ({result['n_queries']} queries, {result['n_factchecks']} fact-checks)",
             f"{'config':<16}{'mode':<7}" + "".join(f"{c:>8}" for c in cols) + f"{'p50 ms':>9}{'p95 ms':>9}"]
    for name, body in result["configs"].items():
        if "skipped" in body:
            lines.append(f"{name:<16}skipped: {body['skipped']}")
            continue
        per_mode = body if "S@10" not in body else {result["modes"][0]: body}
        for mode, m in per_mode.items():
            lines.append(f"{name:<16}{mode:<7}" + "".join(f"{m[c]:>8.3f}" for c in cols)
                         + f"{m['latency_ms']['p50']:>9.1f}{m['latency_ms']['p95']:>9.1f}")
    return "\n".join(lines)


def cmd_evaluate(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.evaluate.run import evaluate, load_dataset
    from plugin.search.retrieval import load_configs

    settings = services.settings
    dataset = load_dataset(dataset_path(args.dataset, " (factchecks.jsonl, queries.jsonl, qrels.jsonl)"))
    configs = load_configs(args.configs_file)
    if args.config:
        wanted = [c.strip() for c in args.config.split(",") if c.strip()]
        unknown = [c for c in wanted if c not in configs]
        if unknown:
            raise BadInput(f"unknown configuration(s) {unknown}; known: {', '.join(configs)}")
        configs = {c: configs[c] for c in wanted}
    from plugin.search.rerank import load_rerankers

    rerankers = load_rerankers(configs, settings)
    result = evaluate(services.store, services.embedder, settings, dataset, configs,
                      mode=args.mode, use_dates=args.dates, rerankers=rerankers, rebuild=args.rebuild)
    if args.record:
        from datetime import date

        from plugin.search.retrieval import packaged_configs_path, write_scores

        write_scores(args.configs_file or packaged_configs_path(), result, on=date.today().isoformat())
    if args.table:
        print(_table(result))
    else:
        dump(result)
    return 0


def cmd_bench(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.bench import bench
    from plugin.lab.evaluate.run import load_dataset
    from plugin.models import Mode
    from plugin.search.retrieval import load_configs

    settings = services.settings
    dataset = load_dataset(dataset_path(args.dataset))
    configs = load_configs(args.configs_file)
    if args.config:
        configs = {c: configs[c] for c in args.config.split(",") if c in configs}
    sizes = [int(x) for x in args.docs.split(",")] if args.docs else []
    result = bench(services.store, services.embedder, settings, dataset, configs,
                   sizes=sizes, concurrency=args.concurrency, n_queries=args.queries,
                   seconds=args.seconds, mode=Mode.parse(args.mode))
    dump(result)
    return 0


def cmd_train_reranker(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.train_reranker import train_reranker

    settings = services.settings
    for flag, path in (("--dataset", args.dataset), ("--groups", args.groups),
                       ("--remote-weights", args.remote_weights)):
        if path is not None and not path.exists():
            raise BadInput(f"{flag} {str(path)!r} not found")
    dump(train_reranker(settings, args.dataset, args.out, epochs=args.epochs, negatives=args.negatives,
                         pool=args.pool, max_length=args.max_length, batch_size=args.batch_size,
                         lr=args.lr, seed=args.seed, loss=args.loss, threads=args.threads,
                         train_layers=args.train_layers or None, first_stage=args.first_stage,
                         device=args.device, export_groups=args.export_groups,
                         groups_file=args.groups, pack=args.pack, remote_weights=args.remote_weights))
    return 0


def register(sub: Any, add: Any) -> None:
    sp = add("evaluate", cmd_evaluate, "run named retrieval configurations over a dataset and print metrics")
    sp.add_argument("--dataset", type=Path, help=f"dataset folder (default {DEFAULT_DATASET} when present)")
    sp.add_argument("--config", help="NAME[,NAME...] (default: every configuration)")
    sp.add_argument("--configs-file", type=Path, help="a retrieval configuration file (default: the packaged one)")
    sp.add_argument("--mode", help="mono|cross|auto|both (default: both for datasets with crosslingual pairs, else mono)")
    sp.add_argument("--dates", action="store_true", help="only fact-checks published on or before each query's date")
    sp.add_argument("--rebuild", action="store_true", help="re-index the dataset even if an index exists")
    sp.add_argument("--record", action="store_true",
                    help="write the scores into the configuration file as each configuration's last_scores")
    sp.add_argument("--json", action="store_true", help="print JSON (the default)")
    sp.add_argument("--table", action="store_true", help="print a table instead of JSON")

    sp = add("bench", cmd_bench, "latency, throughput, ingest rate and memory per configuration and corpus size")
    sp.add_argument("--dataset", type=Path, help=f"dataset folder (default {DEFAULT_DATASET} when present)")
    sp.add_argument("--config", help="NAME[,NAME...] (default: every configuration without a reranker)")
    sp.add_argument("--configs-file", type=Path)
    sp.add_argument("--docs", help="scaled synthetic corpus sizes, e.g. 100000,1000000")
    sp.add_argument("--concurrency", type=int, default=2)
    sp.add_argument("--queries", type=int, default=200, help="queries for the latency run")
    sp.add_argument("--seconds", type=float, default=20.0, help="duration of the throughput run")
    sp.add_argument("--mode", default="auto")
    sp.add_argument("--json", action="store_true", help="print JSON (the default)")

    sp = add("train-reranker", cmd_train_reranker,
             "fine-tune a cross-encoder reranker on a dataset's training queries (needs factsieve[train])")
    sp.add_argument("--dataset", type=Path, help="dataset folder (queries with split == train are used)")
    sp.add_argument("--out", help="NAME (under the model cache's rerankers/) or a folder")
    sp.add_argument("--first-stage", default="factsieve",
                    help="configuration the hard negatives are mined from (the one the reranker sits behind)")
    sp.add_argument("--epochs", type=int, default=4)
    sp.add_argument("--negatives", type=int, default=7, help="hard negatives per positive per step")
    sp.add_argument("--pool", type=int, default=30, help="negatives are sampled from the first stage's top N")
    sp.add_argument("--max-length", type=int, default=160, help="tokens per (query, passage) pair")
    sp.add_argument("--batch-size", type=int, default=16, help="pairs per step (whole groups)")
    sp.add_argument("--lr", type=float, default=3e-5)
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--loss", default="listwise", help="listwise (softmax over each group) or bce")
    sp.add_argument("--threads", type=int, help="torch CPU threads (default: the CPUs this process may use)")
    sp.add_argument("--device", default="auto", help="auto (CUDA when torch sees one), cpu or cuda")
    sp.add_argument("--train-layers", type=int, default=4,
                    help="fine-tune only the top N encoder layers (0: all); the pooler and classifier always")
    sp.add_argument("--export-groups", type=Path, metavar="FILE",
                    help="mine the training groups into FILE and stop (no torch needed)")
    sp.add_argument("--groups", type=Path, metavar="FILE", help="train from groups written by --export-groups")
    sp.add_argument("--pack", type=Path, metavar="FILE",
                    help="write a torch-only training bundle for an accelerator box and stop "
                         "(scripts/train_reranker_remote.py trains it)")
    sp.add_argument("--remote-weights", type=Path, metavar="DIR",
                    help="finish the model from weights trained from a --pack bundle")
