"""The lab's measuring commands: evaluate, tune, calibrate, bench, bench-evidence, lookup-threshold."""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from plugin.errors import BadInput
from plugin.params import parse_float, parse_int
from plugin.service.services import Services

from cli.common import by_fusion, dataset_path, dump, select_configs, split_names


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
    from plugin.learn.train.datasets import load_dataset, with_extra_corpus
    from plugin.lab.evaluate.run import evaluate
    from plugin.search.rerank import load_rerankers

    settings = services.settings
    dataset = load_dataset(dataset_path(args.dataset, " (factchecks.jsonl, queries.jsonl, qrels.jsonl)"))
    for corpus in args.extra_corpus or ():
        dataset = with_extra_corpus(dataset, corpus)
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
        splits=args.split.split(",") if args.split else None,
        live_budget_ms=s.rerank_budget_ms if args.live else None))
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
    from plugin.learn.train.datasets import load_dataset, with_extra_corpus

    dataset = load_dataset(dataset_path(args.dataset))
    for corpus in args.extra_corpus or ():
        dataset = with_extra_corpus(dataset, corpus)
    config = next(iter(select_configs(args.configs_file, args.config).values()))
    baselines = select_configs(args.configs_file, args.baseline) if args.baseline else {}
    try:
        values = [float(v) for v in args.values.split(",") if v.strip()]
    except ValueError:
        raise BadInput(f"--values takes numbers separated by commas, got {args.values!r}") from None
    try:
        dump(tune(services.store, services.embedder, services.settings, dataset, config, args.param,
                  values, modes=[m.strip() for m in args.mode.split(",") if m.strip()],
                  baselines=baselines, folds=args.folds, repeats=args.repeats,
                  splits=split_names(args.split) if args.split else None))
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    return 0


def cmd_calibrate(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.calibrate import calibrate
    from plugin.learn.train.datasets import load_dataset
    from plugin.models import Mode

    dataset = load_dataset(dataset_path(args.dataset))
    config = next(iter(select_configs(args.configs_file, args.config).values()))
    checks = [load_dataset(dataset_path(p)) for p in args.check or []]
    out = args.out if args.out.suffix == ".json" else args.out / f"{config.name}.json"
    if args.add_languages:
        from plugin.lab.calibrate import add_languages
        from plugin.search.calibration import load_calibrator

        base = load_calibrator(config.calibrator or config.name)
        if base is None:
            raise BadInput(f"configuration {config.name!r} has no packaged confidence model to add languages to")
        reranker, trained = None, {}
        if config.rerank is not None:
            from plugin.lab.evaluate.run import trained_queries_of
            from plugin.search.rerank import load_rerankers, read_manifest, resolve_reranker_path

            reranker = load_rerankers({config.name: config}, services.settings).get(config.name)
            if reranker is None:
                raise BadInput(f"the reranker of {config.name!r} is not available here: `factsieve model build`")
            folder = resolve_reranker_path(config.rerank.model, services.settings)
            manifest = read_manifest(folder) if folder else {}
            trained = {d.path.name: trained_queries_of(manifest, d.path.name) for d in [dataset, *checks]}
        try:
            dump(add_languages(services.store, services.embedder, services.settings, base, [dataset, *checks],
                               config, out=out, mode=Mode.parse(args.mode), reranker=reranker, trained=trained))
        except ValueError as exc:
            raise BadInput(str(exc)) from None
        return 0
    try:
        dump(calibrate(services.store, services.embedder, services.settings, dataset, config,
                       out=out, mode=Mode.parse(args.mode),
                       checks=checks, cross_fit=[c.strip() for c in (args.cross_fit or "").split(",") if c.strip()]))
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    return 0


def cmd_bench(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.bench import bench
    from plugin.learn.train.datasets import load_dataset
    from plugin.models import Mode

    from plugin.search.rerank import load_rerankers

    sizes = [parse_int("--docs", x, lo=1, hi=10**9) for x in split_names(args.docs)] if args.docs else []
    configs = select_configs(args.configs_file, args.config)
    dataset = load_dataset(dataset_path(args.dataset))
    if args.split:
        wanted = set(split_names(args.split))
        dataset = replace(dataset, queries=[q for q in dataset.queries if q.get("split") in wanted])
        if not dataset.queries:
            raise BadInput(f"{dataset.path} has no queries in split(s) {', '.join(sorted(wanted))}")
    rerankers = load_rerankers(configs, services.settings)
    result = by_fusion(args, services, configs, lambda s: bench(
        services.store, services.embedder, s, dataset, configs, sizes=sizes,
        concurrency=args.concurrency, n_queries=args.queries, seconds=args.seconds,
        mode=Mode.parse(args.mode),
        # once: with --fusion both, on the client run only
        hosted=args.hosted and not (args.fusion == "both" and s.server_fusion), rerankers=rerankers,
        levers=args.levers))
    dump(result)
    return 0


def cmd_bench_evidence(args: argparse.Namespace, services: Services) -> int:
    from cli.common import DEFAULT_AVERITEC
    from plugin.lab.bench_evidence import bench_evidence
    from plugin.verify.averitec import read_claims

    dataset = args.dataset or DEFAULT_AVERITEC
    if not dataset.exists():
        raise BadInput(f"dataset folder {str(dataset)!r} not found: pass --dataset DIR (claims.jsonl)")
    sizes = [parse_int("--docs", x, lo=1, hi=10**9) for x in split_names(args.docs)] if args.docs else []
    dump(bench_evidence(services, read_claims(dataset), sizes=sizes,
                        n_queries=parse_int("--queries", str(args.queries), lo=1, hi=10**6),
                        target=parse_int("--project", str(args.project), lo=1, hi=10**12), drop=args.drop,
                        log=lambda message: print(message, file=sys.stderr, flush=True)))
    return 0


def cmd_lookup_threshold(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.lookup_threshold import measure

    dump(measure(services, clef=args.clef, averitec=args.averitec, retrieval=args.retrieval,
                 min_precision=args.min_precision, fixture=args.fixture,
                 fixture_claims=args.fixture_claim,
                 log=lambda message: print(message, file=sys.stderr, flush=True)))
    return 0


def cmd_image_posts(args: argparse.Namespace, services: Services) -> int:
    from pathlib import Path

    from plugin.learn.train.datasets import load_dataset
    from plugin.lab.images.posts import image_posts
    from plugin.lab.images.render import TEMPLATES
    from plugin.search.rerank import load_rerankers

    settings = services.settings
    dataset = load_dataset(dataset_path(args.dataset, " (factchecks.jsonl, queries.jsonl, qrels.jsonl)"))
    configs = select_configs(args.configs_file, args.config)
    if len(configs) != 1:
        raise BadInput("--config names one configuration")
    templates = split_names(args.templates)
    unknown = [t for t in templates if t not in TEMPLATES]
    if unknown:
        raise BadInput(f"unknown template(s) {unknown}; known: {', '.join(TEMPLATES)}")
    name, config = next(iter(configs.items()))
    ocr_weights = [parse_float("--ocr-weights", w, lo=0, hi=100)
                   for w in split_names(args.ocr_weights)] if args.ocr_weights else None
    generate = None
    if settings.llm_url:
        from plugin.search.generated import LLMVariants

        generate = LLMVariants(services.llm)
    dump(image_posts(services.store, services.embedder, settings, dataset, config, templates=templates,
                     splits=split_names(args.split) if args.split else None, mode=args.mode,
                     unknown_lang=args.unknown_lang,
                     limit=parse_int("--limit", args.limit, lo=1, hi=10**6) if args.limit else None,
                     work_dir=args.work_dir, fresh=args.fresh,
                     caption=args.caption, ocr_weights=ocr_weights,
                     reranker=load_rerankers(configs, settings).get(name), generate=generate,
                     log=lambda message: print(message, file=sys.stderr, flush=True)))
    return 0


def cmd_image_dup_bench(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.images.dup_bench import dup_bench

    sizes = [parse_int("--stored", x, lo=1, hi=10**8) for x in split_names(args.stored)] if args.stored else []
    embedder = services.embedder if sizes else None
    dump(dup_bench(services.settings, n_images=parse_int("--images", args.images, lo=2, hi=10**6),
                   seed=args.seed, store=services.store if sizes else None,
                   dimension=embedder.dim if embedder else 0, model=embedder.name if embedder else "",
                   sizes=sizes, n_queries=parse_int("--queries", args.queries, lo=1, hi=10**6),
                   log=lambda message: print(message, file=sys.stderr, flush=True)))
    return 0
