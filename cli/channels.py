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
                    help="also the table over thresholds and the lowest whose precision is >= 0.95 by its Wilson lower bound (tuning posts only)")
    sp.add_argument("--unanswerable", action="store_true",
                    help="also send every message as if its fact-checks were not indexed (any answer there is wrong)")
    sp.add_argument("--sample", type=int, metavar="N",
                    help="only N of the split's queries, the same N every run (by a hash of their ids)")
    sp.add_argument("--misses", action="store_true",
                    help="also every wrong answer: the message, its fact-checks' claims and what was sent (JSON)")
    sp.add_argument("--json", action="store_true", help="print JSON (default: one line)")

    channels = sub.add_parser("channels", help="tipline channels (Telegram bots, WhatsApp numbers)").add_subparsers(
        dest="channels_command", required=True, metavar="COMMAND")
    sp = add("add", cmd_channels_add, "add a channel; prints it with the webhook secret (Telegram) or verify token "
             "(WhatsApp) made for it, shown only this once (secrets from FACTSIEVE_CHANNEL_BOT_TOKEN, _ACCESS_TOKEN "
             "and _APP_SECRET, never flags: those stay in the shell history)", channels)
    sp.add_argument("--kind", required=True, choices=["telegram", "whatsapp"])
    sp.add_argument("--name", required=True, help="what the channel is (shown in lists)")
    sp.add_argument("--tenant", default="default", help="the newsroom whose desk and claims it uses")
    sp.add_argument("--phone-number-id", help="WhatsApp: the business number's id")
    sp.add_argument("--default-lang", default="en", help="replies' language when the message's has no strings")
    sp.add_argument("--threshold", metavar="T", help="answer without a person from this confidence (default tipline.json's)")
    sp.add_argument("--template", metavar="NAME[:LANG]", help="WhatsApp: the template for answers outside 24 hours")
    add("list", cmd_channels_list, "the channels (never their secrets)", channels)
    sp = add("remove", cmd_channels_remove, "remove a channel", channels)
    sp.add_argument("id")


#: where ``channels add`` reads each secret (environment variables, so they stay out of the shell's history)
SECRET_ENV = {"bot_token": "FACTSIEVE_CHANNEL_BOT_TOKEN", "access_token": "FACTSIEVE_CHANNEL_ACCESS_TOKEN",
              "app_secret": "FACTSIEVE_CHANNEL_APP_SECRET"}


def cmd_channels_add(args: argparse.Namespace, services: Services) -> int:
    import os

    fields: dict[str, Any] = {k: os.environ[v] for k, v in SECRET_ENV.items() if os.environ.get(v)}
    if args.phone_number_id:
        fields["phone_number_id"] = args.phone_number_id
    fields["default_lang"] = args.default_lang
    if args.threshold:
        fields["threshold"] = parse_float("--threshold", args.threshold, lo=0.0, hi=1.0)
    if args.template:
        name, _, lang = args.template.partition(":")
        fields["template"] = {"name": name, "lang": lang or "en"}
    try:
        ch, made = services.channels.create(args.kind, args.tenant, args.name, fields)
    except BadInput as exc:
        missing = [SECRET_ENV[f] for f in SECRET_ENV if f in exc.detail]
        hint = f" (set {', '.join(missing)})" if missing else ""
        raise BadInput(exc.detail + hint) from None
    dump({**ch.public(), **made})
    return 0


def cmd_channels_list(args: argparse.Namespace, services: Services) -> int:
    dump([c.public() for c in services.channels.list(None)])
    return 0


def cmd_channels_remove(args: argparse.Namespace, services: Services) -> int:
    services.channels.remove(args.id, None)
    dump({"removed": args.id})
    return 0


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
    if args.sample is not None:
        if args.sample < 1:
            raise BadInput("--sample: a positive number of queries")
        import hashlib

        queries = sorted(queries, key=lambda q: hashlib.sha1(str(q["id"]).encode()).hexdigest())[: args.sample]
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
    out = score(matches, dataset.qrels["all"], rule, without, misses=args.misses)
    out.update(dataset=dataset.name, split=",".join(sorted(wanted)) if wanted else "all",
               **({"sample": len(queries)} if args.sample is not None else {}))
    if args.misses:  # the message and its own fact-checks beside what was sent, to read
        import json

        args.json = True
        text = {str(q["id"]): q["text"] for q in queries}
        wanted_fc = {f for m in out["misses"] for f in dataset.qrels["all"][m["query"]]}
        with open(dataset.path / "factchecks.jsonl", encoding="utf-8") as fh:
            gold = {str(r["id"]): r.get("claim") for r in map(json.loads, filter(str.strip, fh))
                    if str(r["id"]) in wanted_fc}
        for m in out["misses"]:
            m.update(text=text[m["query"]], answers=[gold.get(f) for f in sorted(dataset.qrels["all"][m["query"]])])
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
