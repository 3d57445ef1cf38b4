"""Rebuild samples/evidence/: the demo's evidence pool and the claims it verifies.

The gold answers of 40 AVeriTeC dev tuning claims (none from the few-shot pool), as evidence
documents with their source URLs, dated the day before their claim; and samples/demo_claims.jsonl.

    python scripts/make_sample_evidence.py [../shared/data/averitec_dev]
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from plugin.verify.averitec import gold_answer_documents, read_claims
from plugin.verify.fewshot import load_pool

DEMO = ["dev-39"]  # "5G causes COVID-19." (Refuted)
N_CLAIMS = 40


def main() -> int:
    src = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/averitec_dev")
    fewshot = {e["id"] for e in load_pool().examples}
    claims = [c for c in read_claims(src) if c["id"] not in fewshot]
    chosen = [c for c in claims if c["id"] in DEMO] + [c for c in claims if c["id"] not in DEMO][:N_CLAIMS - len(DEMO)]
    out = Path("samples/evidence")
    out.mkdir(parents=True, exist_ok=True)
    docs = [{k: v for k, v in d.items() if k != "position_hint"} for d in gold_answer_documents(chosen)]
    (out / "averitec_gold_answers.jsonl").write_text(
        "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    demo = [{"id": c["id"], "claim": c["claim"], "date": c["date"], "label": c["label"],
             "exclude_urls": [c["fact_checking_article"]] if c.get("fact_checking_article") else []}
            for c in chosen if c["id"] in DEMO]
    Path("samples/demo_claims.jsonl").write_text(
        "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in demo), encoding="utf-8")
    print(json.dumps({"documents": len(docs), "claims": len(chosen), "demo": DEMO}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
