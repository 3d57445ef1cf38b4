"""Tiplines on the command line: ``evaluate-tipline`` (the channel's decision measured on a
dataset's queries replayed as messages)."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from plugin.errors import BadInput
from plugin.params import parse_float
from plugin.service.services import Services

from cli.common import DEFAULT_DATASET, dataset_path, dump, split_names


def register(sub: Any, add: Any) -> None:
    sp = add("evaluate-tipline", cmd_evaluate_tipline,
             "replay a dataset's queries as tipline messages through the channel's decision code (a fresh "
             "tenant): messages, answered, answered share, precision of the answers, threshold")
    sp.add_argument("--dataset", type=Path, help=f"dataset folder (default {DEFAULT_DATASET} when present)")
    sp.add_argument("--split", help="SPLIT[,SPLIT...]: only these query splits (CLEF-2020: dev,test)")
    sp.add_argument("--threshold", metavar="T", help="the confidence to answer at (default: the channel's, tipline.json)")
    sp.add_argument("--config", metavar="NAME", help="the retrieval configuration (default: the one post jobs use)")
    sp.add_argument("--choose", action="store_true",
                    help="also the table over thresholds and the lowest with precision >= 0.95 (tuning posts only)")
    sp.add_argument("--unanswerable", action="store_true",
                    help="also send every message as if its fact-checks were not indexed (any answer there is wrong)")
    sp.add_argument("--json", action="store_true", help="print JSON (default: one line)")


def cmd_evaluate_tipline(args: argparse.Namespace, services: Services) -> int:
    import uuid
    from dataclasses import replace

    from plugin.channels.answer import default_rule
    from plugin.lab.simulate import drop_simulation, sim_settings
    from plugin.lab.tipline import choose, match_all, match_unanswerable, score
    from plugin.learn.train.datasets import ensure_dataset_index, load_dataset

    dataset = load_dataset(dataset_path(args.dataset, " (queries.jsonl, qrels.jsonl, factchecks.jsonl)"))
    rule = default_rule()
    if args.threshold:
        rule = replace(rule, threshold=parse_float("--threshold", args.threshold, lo=0.0, hi=1.0))
    wanted = set(split_names(args.split)) if args.split else None
    queries = [q for q in dataset.queries if wanted is None or q.get("split") in wanted]
    if not queries:
        raise BadInput(f"no queries in split(s) {sorted(wanted or [])}")
    alias, _ = ensure_dataset_index(services.store, services.embedder, dataset, services.settings)
    sim = Services(sim_settings(services.settings, uuid.uuid4().hex[:8], alias), store=services.store,
                   embedder=services.embedder)
    try:
        matches = match_all(sim.matching, queries, dataset.qrels["all"], config=args.config)
        without = None
        if args.unanswerable:
            from plugin.search.rerank import load_rerankers
            from plugin.service.matching import Occasion, config_for

            cfg = services.config(config_for(services.settings, services.matching.configs, args.config, Occasion.JOB))
            reranker = load_rerankers({cfg.name: cfg}, services.settings).get(cfg.name) if cfg.rerank else None
            without = match_unanswerable(services.store, services.embedder, services.settings, alias, dataset,
                                         queries, cfg, reranker)
    finally:
        drop_simulation(sim)
    out = score(matches, dataset.qrels["all"], rule, without)
    out.update(dataset=dataset.name, split=",".join(sorted(wanted)) if wanted else "all")
    if args.choose:
        out["choose"] = choose(matches, dataset.qrels["all"], rule, unanswerable=without)
    if args.json:
        dump(out)
    else:
        print(f"{out['dataset']} ({out['split']}): {out['messages']} messages, {out['answered']} answered "
              f"({out['answered_share']:.1%}), precision {out['precision']}, threshold {out['threshold']}")
        for row in (out.get("choose") or {}).get("table", []):
            print(f"  threshold {row['threshold']}: answered {row['answered']} ({row['answered_share']:.1%}), "
                  f"precision {row['precision']}")
    return 0
