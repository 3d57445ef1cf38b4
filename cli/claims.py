"""Claims on the command line: ``evaluate-clusters`` (the lab's measurement of the join rule)."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

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
