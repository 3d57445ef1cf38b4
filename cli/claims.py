"""Claims on the command line: ``evaluate-clusters`` (the lab's measurement of the join rule),
``train-checkworthiness`` and ``evaluate-checkworthiness`` (the check-worthiness head)."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from plugin.artefacts import CHECKWORTHINESS, written_dir
from plugin.errors import BadInput
from plugin.params import parse_float
from plugin.service.services import Services

from cli.common import DEFAULT_DATASET, dataset_path, dump, select_configs, split_names


def register(sub: Any, add: Any) -> None:
    sp = add("evaluate-clusters", cmd_evaluate_clusters,
             "play a dataset's queries as one tenant's stream of posts, join them into claims, and "
             "print pairwise precision/recall and B-cubed F1 by embedding threshold")
    sp.add_argument("--dataset", type=Path, help=f"dataset folder (default {DEFAULT_DATASET} when present)")
    sp.add_argument("--split", help="SPLIT[,SPLIT...]: only these query splits (CLEF-2020: dev,test)")
    sp.add_argument("--config", default="factsieve", metavar="NAME",
                    help="the configuration whose best match the same-answer signal reads (default factsieve)")
    sp.add_argument("--signals", metavar="S[,S...]",
                    help="only these signals of the served rule: embedding, same_claim, same_answer, bm25, image")
    sp.add_argument("--bm25", metavar="X", help="the normalised BM25 score from which the bm25 signal links (0..1)")
    sp.add_argument("--threshold", metavar="T", help="the embedding threshold `served` reports (default: the served rule's)")
    sp.add_argument("--compare-signals", action="store_true",
                    help="also the chosen row of each signal set (embedding, +bm25, +same_claim, +same_answer, +image)")
    sp.add_argument("--choose", action="store_true",
                    help="also the rule with the most pairwise recall at precision >= 0.95 over the embedding "
                         "thresholds and a grid of same-answer confidence and similarity (run it on tuning posts only)")
    sp.add_argument("--json", action="store_true", help="print JSON (default: a table)")

    sp = add("bench-claims", cmd_bench_claims,
             "what a post's join to its claim costs as the posts index grows (throwaway synthetic posts "
             "indexes; JSON)")
    sp.add_argument("--posts", default="10000,100000", metavar="N[,N...]", help="posts-index sizes (default 10000,100000)")
    sp.add_argument("--queries", default="200", metavar="N", help="joins measured per size (default 200)")
    sp.add_argument("--keep", action="store_true", help="keep the synthetic indexes (bench-claims-<n>)")

    ct24 = Path("../shared/data/ct24_checkworthy_en")
    sp = add("train-checkworthiness", cmd_train_checkworthiness,
             "fit the check-worthiness head on a sentence dataset's train split (L2 and threshold chosen out of "
             "fold), score its other splits once, write the head")
    sp.add_argument("--dataset", type=Path, default=ct24, help=f"a folder with sentences.jsonl (default {ct24})")
    sp.add_argument("--name", default="ct24-e5small-logistic", help="the head's name")
    sp.add_argument("--out", type=Path, default=written_dir(CHECKWORTHINESS), metavar="DIR",
                    help="where to write NAME.json (default build/artefacts/checkworthiness/)")
    sp.add_argument("--work-dir", type=Path, default=Path(".cache/lab/checkworthiness"), metavar="DIR",
                    help="cached sentence embeddings (default .cache/lab/checkworthiness)")

    sp = add("evaluate-checkworthiness", cmd_evaluate_checkworthiness,
             "positive-class F1, precision, recall and accuracy of the check-worthiness head on a sentence dataset")
    sp.add_argument("--dataset", type=Path, default=ct24, help=f"a folder with sentences.jsonl (default {ct24})")
    sp.add_argument("--split", help="SPLIT[,SPLIT...] (CheckThat! 2024: train, dev, dev-test; default all)")
    sp.add_argument("--head", type=Path, help="a head's JSON file (default the committed one)")
    sp.add_argument("--work-dir", type=Path, default=Path(".cache/lab/checkworthiness"), metavar="DIR")
    sp.add_argument("--json", action="store_true", help="print JSON (default: one line)")


def cmd_bench_claims(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.bench_claims import bench_join
    from plugin.params import parse_int

    sizes = [parse_int("--posts", v.strip(), lo=10, hi=10_000_000) for v in args.posts.split(",") if v.strip()]
    dump(bench_join(services.store, services.settings, sizes, queries=parse_int("--queries", args.queries, lo=1, hi=100_000),
                    dim=services.embedder.dim, keep=args.keep))
    return 0


def cmd_train_checkworthiness(args: argparse.Namespace, services: Services) -> int:
    import json

    from plugin.lab.checkworthiness import train

    try:
        out = train(args.dataset, services.embedder, work_dir=args.work_dir, name=args.name)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    folder = args.out
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{args.name}.json"
    path.write_text(json.dumps(out["head"], indent=1) + "\n", encoding="utf-8")
    dump({"written": str(path), "out_of_fold": out["out_of_fold"], "measured": out["measured"]})
    return 0


def cmd_evaluate_checkworthiness(args: argparse.Namespace, services: Services) -> int:
    from plugin.claims.checkworthy import load_head
    from plugin.lab.checkworthiness import evaluate

    head = load_head(str(args.head) if args.head else None)
    if head is None:
        raise BadInput(f"no check-worthiness head at {args.head or 'the committed default'}: "
                       f"`factsieve train-checkworthiness`")
    try:
        out = evaluate(args.dataset, services.embedder, head, work_dir=args.work_dir,
                       splits=split_names(args.split) if args.split else None)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    if args.json:
        dump(out)
    else:
        print(f"{out['split']}: F1 {out['f1']:.3f}  precision {out['precision']:.3f}  recall {out['recall']:.3f}  "
              f"accuracy {out['accuracy']:.3f}  (n {out['n']}, threshold {out['threshold']})")
    return 0


def _table(result: dict[str, Any]) -> str:
    def fmt(v: Any) -> str:
        return "   —" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)

    lines = [f"{result['dataset']} ({result['split']}): {result['posts']} posts, "
             f"{result['chosen']['gold_clusters']} gold claims, {result['chosen']['gold_pairs']} gold pairs",
             f"{'threshold':>9} {'precision':>9} {'recall':>7} {'B3 F1':>6} {'clusters':>8} {'wrong':>6}"]
    for r in result["thresholds"]:
        lines.append(f"{fmt(r['threshold']):>9} {fmt(r['pairwise_precision']):>9} {fmt(r['pairwise_recall']):>7} "
                     f"{fmt(r['bcubed_f1']):>6} {r['clusters']:>8} {r['wrong_pairs']:>6}")
    c, s = result["chosen"], result["served"]
    lines.append(f"chosen (precision >= {result['min_precision']}): threshold {fmt(c['threshold'])}, "
                 f"precision {fmt(c['pairwise_precision'])}, recall {fmt(c['pairwise_recall'])}")
    lines.append(f"served rule (threshold {fmt(s['threshold'])}): precision {fmt(s['pairwise_precision'])}, "
                 f"recall {fmt(s['pairwise_recall'])}, B3 F1 {fmt(s['bcubed_f1'])}")
    if result.get("choose"):
        lines.append(f"best rule on these posts: {result['choose']['rule']}: {result['choose']['row']}")
    for name, r in (result.get("signals") or {}).items():
        lines.append(f"  {name:<14} threshold {fmt(r['threshold'])}: precision {fmt(r['pairwise_precision'])}, "
                     f"recall {fmt(r['pairwise_recall'])}")
    return "\n".join(lines)


def cmd_evaluate_clusters(args: argparse.Namespace, services: Services) -> int:
    from dataclasses import replace

    from plugin.claims.cluster import served_rule
    from plugin.lab.clusters import evaluate_clusters
    from plugin.learn.train.datasets import load_dataset
    from plugin.search.rerank import load_rerankers

    dataset = load_dataset(dataset_path(args.dataset, " (queries.jsonl, qrels.jsonl, factchecks.jsonl)"))
    configs = select_configs(None, args.config)
    config = next(iter(configs.values()))
    rule = served_rule()
    if args.bm25 is not None:
        rule = replace(rule, bm25=parse_float("--bm25", args.bm25, lo=0.0, hi=1.0))
    if args.signals:
        rule = rule.only(s.strip() for s in args.signals.split(",") if s.strip())
    threshold = parse_float("--threshold", args.threshold, lo=0.0, hi=1.0) if args.threshold else None
    reranker = load_rerankers(configs, services.settings).get(config.name) if config.rerank else None
    try:
        result = evaluate_clusters(services.store, services.embedder, services.settings, dataset, config,
                                   splits=split_names(args.split) if args.split else None, rule=rule,
                                   threshold=threshold, compare=args.compare_signals, choose=args.choose,
                                   reranker=reranker)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    if args.json:
        dump(result)
    else:
        print(_table(result))
    return 0
