#!/usr/bin/env python3
"""Score a reference AVeriTeC predictions file and print the numbers as JSON.

Shows that ``plugin.verify.scoring`` reproduces the published reference scores (HerO on the
shared AVeriTeC dev claims, see ``shared/data/averitec_dev/reference/README.md``). Needs WordNet:
run ``scripts/wordnet.sh`` first.

usage: scripts/check_averitec_reference.py [--gold CLAIMS.jsonl] [PREDICTIONS.jsonl ...]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from plugin.errors import FactSieveError  # noqa: E402
from plugin.verify.scoring import score_predictions  # noqa: E402
from plugin.verify.wordnet import ensure_wordnet  # noqa: E402

SHARED = ROOT.parent / "shared" / "data" / "averitec_dev"
DEFAULT_GOLD = SHARED / "claims.jsonl"
DEFAULT_PREDICTIONS = [SHARED / "reference" / "hero_8b_predictions.jsonl",
                       SHARED / "reference" / "hero_70b_predictions.jsonl"]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def rounded(value: Any, digits: int) -> Any:
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, dict):
        return {k: rounded(v, digits) for k, v in value.items()}
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("predictions", nargs="*", type=Path, default=DEFAULT_PREDICTIONS,
                        help="predictions JSONL files (default: both HerO reference files)")
    parser.add_argument("--gold", type=Path, default=DEFAULT_GOLD, help="gold claims JSONL")
    parser.add_argument("--nltk-data", type=Path,
                        default=Path(os.environ.get("FACTSIEVE_CACHE", ROOT / ".cache")) / "nltk_data",
                        help="folder holding corpora/wordnet (default: $FACTSIEVE_CACHE/nltk_data, "
                             "else .cache/nltk_data)")
    parser.add_argument("--digits", type=int, default=4, help="round floats (default 4)")
    args = parser.parse_args(argv)

    try:
        ensure_wordnet(args.nltk_data)
        gold = read_jsonl(args.gold)
        out = {}
        for path in args.predictions:
            start = time.perf_counter()
            scores = score_predictions(gold, read_jsonl(path))
            scores["seconds"] = round(time.perf_counter() - start, 1)
            out[path.name] = rounded(scores, args.digits)
    except FactSieveError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
    except OSError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
