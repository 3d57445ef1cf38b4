"""``factsieve blend-weight``: choose the verdict model's weight in the LLM/model blend for the
configured LLM, out of fold on the averitec tuning split (``plugin.lab.blend``), and record it in
``plugin/verify/configs/blend.json``. Three steps: ``record`` the LLM's ratings on gold evidence
(minutes to hours: one verdict call per claim), ``head-oof`` the verdict head's out-of-fold
probabilities, ``choose`` the weight from both (seconds; ``--write FILE`` writes the table with it,
never into the installed package)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from plugin.errors import BadInput
from plugin.service.services import Services
from plugin.service.keys import DEFAULT_TENANT

from cli.common import DEFAULT_AVERITEC, dump


def _claims(args: argparse.Namespace) -> list[dict[str, Any]]:
    from plugin.verify.averitec import read_claims

    folder = args.averitec or DEFAULT_AVERITEC
    if not Path(folder).is_dir():
        raise BadInput(f"--averitec {str(folder)!r} is not a folder (claims.jsonl)")
    return read_claims(Path(folder))


def cmd_record(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.blend import record_llm, stratified_subset
    from plugin.verify.config import Strategy

    cfg = services.verification.config(args.config)
    if cfg.strategy not in (Strategy.QA_LOOP, Strategy.SINGLE_CALL):
        raise BadInput(f"{cfg.name!r} does not use the LLM: record with qa-loop or single-call")
    cfg = cfg.model_copy(update={"head_weight": 0.0})
    claims = _claims(args)
    if args.subset:
        claims = stratified_subset(claims, args.subset, args.seed)

    def on_claim(i: int, row: dict[str, Any]) -> None:
        if args.verbose_progress:
            print(f"  {i + 1}/{len(claims)} {row['id']}: {row['verdict']} ({row['verdict_source']}, "
                  f"{row['seconds']} s)", file=sys.stderr)

    report = record_llm(services.verification.verifier(cfg, DEFAULT_TENANT), cfg, claims, args.out, on_claim=on_claim)
    dump({"llm_model": services.settings.llm_model, "config": cfg.name, "claims": len(claims),
          "out": str(args.out), **report})
    return 0


def cmd_head_oof(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.blend import head_oof

    from cli.verdict import chosen_datasets

    datasets = chosen_datasets(args, lambda m: print(m, file=sys.stderr))
    oof = head_oof(services.embedder, datasets, folds=args.folds, shuffle=args.shuffle)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(oof, ensure_ascii=False) + "\n", encoding="utf-8")
    dump({"model": oof["model"], "claims": len(oof["claims"]), "out": str(args.out)})
    return 0


def cmd_choose(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.blend import choose, read_jsonl, read_oof
    from plugin.verify.blend import load_table, packaged_path, with_weight, write_table

    table_path = args.table or packaged_path()
    report = choose(read_jsonl(args.llm_ratings), read_oof(args.oof), _claims(args),
                    prior=float(load_table(table_path)["default"]))
    llm_model = args.llm_model if args.llm_model is not None else services.settings.llm_model
    report = {"llm_model": llm_model, "llm_ratings": str(args.llm_ratings), "oof": str(args.oof), **report}
    if args.write is not None:
        write_table(with_weight(load_table(table_path), llm_model, report["weight"]), args.write, "--write")
        report["written"] = {"table": str(args.write), "llm_model": llm_model, "weight": report["weight"]}
    dump(report)
    return 0


def register(sub: Any, add: Any) -> None:
    help_ = ("choose the verdict model's weight in the LLM/model blend for the configured LLM, out "
             "of fold on the averitec tuning claims (served from plugin/verify/configs/blend.json)")
    steps = sub.add_parser("blend-weight", help=help_, description=help_).add_subparsers(
        dest="blend_command", required=True, metavar="STEP")

    sp = add("record", cmd_record, "record the configured LLM's ratings on each claim's gold evidence "
             "(JSON lines; resumes where an earlier run stopped)", steps)
    sp.add_argument("--averitec", type=Path, metavar="DIR", help=f"claims.jsonl folder (default {DEFAULT_AVERITEC})")
    sp.add_argument("--out", type=Path, required=True, metavar="FILE", help="the JSON Lines file to append to")
    sp.add_argument("--config", default="qa-loop", help="the LLM configuration whose verdict step runs (default qa-loop)")
    sp.add_argument("--subset", type=int, metavar="N", help="only N claims, stratified by label (--seed)")
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--progress", dest="verbose_progress", action="store_true", help="print each claim to stderr")

    sp = add("head-oof", cmd_head_oof, "the verdict head's out-of-fold probabilities on the averitec "
             "claims with gold evidence (the datasets train-verdict reads)", steps)
    from cli.verdict import DATASETS

    for name, (flag, default) in DATASETS.items():
        sp.add_argument(flag, dest=name, type=Path, metavar="DIR", help=f"claims.jsonl folder (default {default} when present)")
    sp.add_argument("--without", action="append", choices=sorted(DATASETS), help="leave this dataset out (repeatable)")
    sp.add_argument("--out", type=Path, required=True, metavar="FILE")
    sp.add_argument("--folds", type=int, default=5)
    sp.add_argument("--shuffle", type=int, default=0, help="the folds' seed")

    sp = add("choose", cmd_choose, "choose the weight by nested cross-validation from the LLM's "
             "ratings and a verdict model's out-of-fold probabilities; --write FILE writes the table with it", steps)
    sp.add_argument("--averitec", type=Path, metavar="DIR", help=f"claims.jsonl folder (default {DEFAULT_AVERITEC})")
    sp.add_argument("--llm-ratings", type=Path, required=True, metavar="FILE", help="written by `blend-weight record`")
    sp.add_argument("--oof", type=Path, required=True, metavar="FILE",
                    help="out-of-fold probabilities of the verdict model (`blend-weight head-oof`, or the fine-tuned model's)")
    sp.add_argument("--llm-model", metavar="NAME",
                    help="the LLM the ratings are from, as FACTSIEVE_LLM_MODEL names it (default: FACTSIEVE_LLM_MODEL)")
    sp.add_argument("--write", type=Path, metavar="FILE",
                    help="write the blend table (--table's) with the chosen weight for the LLM to FILE, outside "
                         "the installed package (records/blend.json, say); copy it over "
                         "plugin/verify/configs/blend.json in a commit to ship it")
    sp.add_argument("--table", type=Path, metavar="FILE", help="the blend table to read (default: the packaged one)")
