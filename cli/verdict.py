"""``factsieve train-verdict``: fit a verdict model without an LLM on tuning data, print its
cross-validated numbers and write the artifact: the head (``--kind head``, a classifier on the
packaged encoder's frozen features) or the fine-tuned cross-encoder (``--kind cross-encoder``,
LoRA on the encoder, trained with JAX)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from plugin.artefacts import VERDICT, written_dir
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

    def note(msg: str) -> None:
        print(msg, file=sys.stderr)

    datasets = chosen_datasets(args, note)
    if args.kind == "cross-encoder":
        return _train_cross_encoder(args, services, datasets, note)
    reference = None
    if not args.no_reference:
        reference = args.reference or (datasets["averitec"] / "reference" if "averitec" in datasets else None)
        if reference is not None and not reference.is_dir():
            if args.reference is not None:
                raise BadInput(f"--reference {str(reference)!r} is not a folder")
            reference = None
    report = train_verdict(services.embedder, datasets, out=args.out, seed=args.seed, folds=args.folds,
                           repeats=3 if args.repeats is None else args.repeats, reference=reference,
                           progress=note if args.verbose_progress else None)
    dump(report)
    return 0


def _train_cross_encoder(args: argparse.Namespace, services: Services, datasets: dict[str, Path],
                         note: Any) -> int:
    from plugin.lab.verdict_xenc import XencOptions, train_verdict_xenc

    if args.retrieved is not None and not args.retrieved.is_file():
        raise BadInput(f"--retrieved {str(args.retrieved)!r} is not a file")
    if args.folds < 2 or (args.repeats is not None and args.repeats < 1):
        raise BadInput(f"need --folds >= 2 and --repeats >= 1, got {args.folds} and {args.repeats}")
    defaults = XencOptions()
    options = XencOptions(**{k: getattr(args, k) if getattr(args, k) is not None else getattr(defaults, k)
                             for k in ("rank", "layers", "epochs", "max_length", "extra_cap", "extra_weight")},
                          seed=args.seed)
    report = train_verdict_xenc(services.settings, datasets, out=args.out, name=args.name,
                                options=options, folds=args.folds,
                                shuffles=[args.seed + r for r in range(args.repeats or 1)],
                                retrieved=args.retrieved, embedder=services.embedder, cv=not args.no_cv,
                                device=args.device, progress=note if args.verbose_progress else None)
    dump(report)
    return 0


def register(sub: Any, add: Any) -> None:
    sp = add("train-verdict", cmd_train_verdict,
             "train a verdict model without an LLM (the head, or the fine-tuned cross-encoder) on "
             "tuning data, cross-validated on AVeriTeC")
    for name, (flag, default) in DATASETS.items():
        sp.add_argument(flag, dest=name, type=Path, metavar="DIR",
                        help=f"claims.jsonl folder (default {default} when present)")
    sp.add_argument("--without", action="append", choices=sorted(DATASETS),
                    help="leave this dataset out (repeatable)")
    sp.add_argument("--reference", type=Path, metavar="DIR",
                    help="HerO-shaped *_predictions.jsonl on the averitec claims, for the blend "
                         "numbers (default: <averitec>/reference when present)")
    sp.add_argument("--no-reference", action="store_true", help="skip the reference blend numbers")
    sp.add_argument("--out", type=Path, default=written_dir(VERDICT), metavar="PATH",
                    help=f"folder (or the head's .npz) to write (default {written_dir(VERDICT)}/); "
                         "FACTSIEVE_VERDICT_HEAD_PATH serves a head from there")
    sp.add_argument("--kind", choices=["head", "cross-encoder"], default="head",
                    help="head: logistic regression on frozen features (minutes); cross-encoder: the "
                         "fine-tuned verdict model (LoRA with JAX; about an hour on 2 cores with CV)")
    sp.add_argument("--folds", type=int, default=5)
    sp.add_argument("--repeats", type=int, default=None,
                    help="cross-validation shuffles (seed, seed+1, …; default 3 for the head, 1 for "
                         "the cross-encoder)")
    xe = sp.add_argument_group("cross-encoder (--kind cross-encoder)")
    xe.add_argument("--name", default="verdict-xenc", help="the adapter's name (default verdict-xenc)")
    xe.add_argument("--retrieved", type=Path, metavar="FILE",
                    help="predictions JSONL (id, evidence) on the averitec claims: their retrieved "
                         "evidence is rated out of fold too")
    xe.add_argument("--no-cv", action="store_true", help="train the final model only")
    xe.add_argument("--device", choices=["cpu", "auto"], default="cpu",
                    help="auto: JAX takes an accelerator when one is there")
    for flag, kind in (("--rank", int), ("--layers", int), ("--epochs", int), ("--max-length", int),
                       ("--extra-cap", int), ("--extra-weight", float)):
        xe.add_argument(flag, type=kind, default=None, help="see plugin.lab.verdict_xenc.XencOptions")
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--progress", dest="verbose_progress", action="store_true",
                    help="print each stage to stderr")
