#!/usr/bin/env python3
"""Train a FactSieve reranker bundle on a torch-only accelerator box.

Here (where OpenSearch and the model cache live):

    factsieve train-reranker mine --dataset DIR --out groups.jsonl
    factsieve train-reranker pack --groups groups.jsonl --out .cache/reranker-pack/pack.pt \\
        --train-layers 0 --negatives 15 --epochs 8 --batch-size 128

There (needs only python3 with torch + transformers, and this checkout for plugin/lab/reranker/):

    python3 scripts/train_reranker_remote.py --pack .cache/reranker-pack/pack.pt --out OUT \\
        [--sweep sweep.json --validation-share 0.15]

Back here:

    factsieve train-reranker import --groups groups.jsonl --weights OUT --out NAME

With ``--sweep``, each entry (a dict of hyper-parameter overrides) is first trained on the
training groups minus a held-out share of the *training* queries and scored by the MRR of the
positive among its hard negatives after every epoch; the best (entry, epoch) is then retrained
on all training groups and written to ``--out``. Evaluation queries are not in the bundle.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from plugin.lab.reranker.pack import train_packed  # noqa: E402  (torch-only import chain)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pack", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--sweep", help="JSON list of hyper-parameter overrides (a file or inline)")
    ap.add_argument("--validation-share", type=float, default=0.15)
    for name, kind in (("epochs", int), ("negatives", int), ("pool", int), ("batch_size", int),
                       ("lr", float), ("seed", int), ("head_lr_scale", float), ("train_layers", int)):
        ap.add_argument(f"--{name.replace('_', '-')}", type=kind, dest=name)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    base = {k: getattr(args, k) for k in ("epochs", "negatives", "pool", "batch_size", "lr", "seed",
                                          "head_lr_scale", "train_layers") if getattr(args, k) is not None}
    if base.get("train_layers") == 0:
        base["train_layers"] = None
    report: dict = {"sweep": []}
    if args.sweep:
        text = Path(args.sweep).read_text() if Path(args.sweep).is_file() else args.sweep
        best = None
        for entry in json.loads(text):
            hp = {**base, **entry}
            with tempfile.TemporaryDirectory() as tmp:
                s = train_packed(args.pack, Path(tmp), device=args.device,
                                 validation_share=args.validation_share, **hp)
            peak = max(s["validation_curve"], key=lambda c: (c["mrr"], -c["epoch"]))
            row = {"overrides": entry, "before": s["validation_before"], "curve": s["validation_curve"],
                   "peak": peak, "training_s": s["training_s"]}
            report["sweep"].append(row)
            print(json.dumps(row), flush=True)
            if best is None or peak["mrr"] > best[1]["mrr"]:
                best = (hp, peak)
        if best is None:
            ap.error("--sweep is an empty list")
        base = {**best[0], "epochs": best[1]["epoch"]}
        report["chosen"] = base
    final = train_packed(args.pack, args.out, device=args.device, **base)
    report["final"] = final
    (args.out / "remote_report.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({"chosen": report.get("chosen"), "final_training_s": final["training_s"],
                      "train_loss": final["train_loss"], "gpu": final["gpu"]}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
