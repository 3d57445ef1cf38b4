"""Rebuild the packaged few-shot pool (plugin/verify/fewshot/averitec_dev_tuning.jsonl): the
first 10 claims of each label in the AVeriTeC dev tuning split, in file order.

    python scripts/make_fewshot.py [../shared/data/averitec_dev]
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from plugin.verify.averitec import fewshot_record, read_claims
from plugin.verify.fewshot import packaged_pool_path
from plugin.verify.scoring import LABELS

PER_LABEL = 10


def main() -> int:
    src = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/averitec_dev")
    picked: dict[str, list[dict]] = {label: [] for label in LABELS}
    for claim in read_claims(src):
        bucket = picked[claim["label"]]
        if len(bucket) < PER_LABEL:
            bucket.append(fewshot_record(claim))
    lines = [json.dumps(r, ensure_ascii=False) for label in LABELS for r in picked[label]]
    packaged_pool_path().write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(json.dumps({"path": str(packaged_pool_path()), "records": len(lines)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
