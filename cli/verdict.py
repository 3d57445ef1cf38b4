"""``factsieve train-verdict``: fit the verdict head (the no-LLM verdict classifier on the packaged
encoder) on tuning data, print its cross-validated numbers and write the artifact."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from plugin.errors import BadInput
from plugin.service.services import Services

from cli.common import dump

SHARED = Path("../shared/data")
#: Dataset name → (flag, default folder). Defaults that are not there are skipped with a note.
DATASETS = {"averitec": ("--averitec", SHARED / "averitec_dev"),
            "climate_fever": ("--climate-fever", SHARED / "climate_fever"),
            "liar_plus": ("--liar-plus", SHARED / "liar_plus")}


def chosen_datasets(args: argparse.Namespace, note: Any = print) -> dict[str, Path]:
    """The dataset folders to train on: each given one (which must exist), else its default
    when present; ``--without`` drops one. None at all is refused."""
    found: dict[str, Path] = {}
    for name, (flag, default) in DATASETS.items():
        given = getattr(args, name)
        if name in (args.without or []):
            continue
        if given is not None:
            if not given.is_dir():
                raise BadInput(f"{flag} {str(given)!r} is not a folder")
            found[name] = given
        elif default.is_dir():
            found[name] = default
        else:
            note(f"note: {name} skipped: no {flag} given and {str(default)!r} is not there")
    if not found:
        raise BadInput("no training data: pass --averitec DIR (and optionally --climate-fever DIR, "
                       "--liar-plus DIR)")
    return found


def cmd_train_verdict(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.verdict import train_verdict
    from plugin.verify.head import packaged_path

    def note(msg: str) -> None:
        print(msg, file=sys.stderr)

    datasets = chosen_datasets(args, note)
    reference = None
    if not args.no_reference:
        reference = args.reference or (datasets["averitec"] / "reference" if "averitec" in datasets else None)
        if reference is not None and not reference.is_dir():
            if args.reference is not None:
                raise BadInput(f"--reference {str(reference)!r} is not a folder")
            reference = None
    out = args.out or services.settings.verdict_head_path or packaged_path()
    report = train_verdict(services.embedder, datasets, out=out, seed=args.seed, folds=args.folds,
                           repeats=args.repeats, reference=reference,
                           progress=note if args.verbose_progress else None)
    dump(report)
    return 0


def register(sub: Any, add: Any) -> None:
    sp = add("train-verdict", cmd_train_verdict,
             "train the verdict head (no LLM: a classifier on the packaged encoder) on tuning data, "
             "cross-validated on AVeriTeC; CPU, a few minutes")
    for name, (flag, default) in DATASETS.items():
        sp.add_argument(flag, dest=name, type=Path, metavar="DIR",
                        help=f"claims.jsonl folder (default {default} when present)")
    sp.add_argument("--without", action="append", choices=sorted(DATASETS),
                    help="leave this dataset out (repeatable)")
    sp.add_argument("--reference", type=Path, metavar="DIR",
                    help="HerO-shaped *_predictions.jsonl on the averitec claims, for the blend "
                         "numbers (default: <averitec>/reference when present)")
    sp.add_argument("--no-reference", action="store_true", help="skip the reference blend numbers")
    sp.add_argument("--out", type=Path, metavar="PATH",
                    help="folder (or .npz) to write (default: FACTSIEVE_VERDICT_HEAD_PATH, else the "
                         "packaged plugin/artefacts/verdict)")
    sp.add_argument("--folds", type=int, default=5)
    sp.add_argument("--repeats", type=int, default=3, help="cross-validation shuffles (seed, seed+1, …)")
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--progress", dest="verbose_progress", action="store_true",
                    help="print each stage to stderr")
