"""Rebuild the bundled sample corpus in samples/ from the evaluation data in ../shared/data.

Run once by the maintainers (the bundled files are committed); users never need it.
Ids get a source prefix (clef-, mc-) so both corpora can share one index.
"""
import json
import random
import sys
from pathlib import Path

SHARED = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data")
OUT = Path(__file__).resolve().parent.parent / "samples"


def rows(path):
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def main():
    for sub in ("clef2020", "multiclaim"):
        (OUT / sub).mkdir(parents=True, exist_ok=True)
    rnd = random.Random(20261122)
    # CLEF-2020 T2: 60 tuning queries, their fact-checks, and 240 other fact-checks as distractors
    clef = SHARED / "clef2020_task2"
    fcs = {r["id"]: r for r in rows(clef / "factchecks.jsonl")}
    queries = [q for q in rows(clef / "queries.jsonl")]
    qrels = rows(clef / "qrels.jsonl")
    picked = rnd.sample(queries, 60)
    picked_ids = {q["id"] for q in picked}
    rel = [r for r in qrels if r["query_id"] in picked_ids]
    keep = {r["factcheck_id"] for r in rel}
    others = [i for i in fcs if i not in keep]
    keep |= set(rnd.sample(others, 300 - len(keep)))
    with open(OUT / "clef2020" / "factchecks.jsonl", "w", encoding="utf-8") as fh:
        for i in sorted(keep, key=int):
            r = dict(fcs[i], id=f"clef-{i}")
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    with open(OUT / "clef2020" / "queries.jsonl", "w", encoding="utf-8") as fh:
        for q in sorted(picked, key=lambda q: int(q["id"])):
            fh.write(json.dumps(dict(q, id=f"clef-{q['id']}"), ensure_ascii=False) + "\n")
    with open(OUT / "clef2020" / "qrels.jsonl", "w", encoding="utf-8") as fh:
        for r in rel:
            fh.write(json.dumps({"query_id": f"clef-{r['query_id']}",
                                 "factcheck_id": f"clef-{r['factcheck_id']}"}) + "\n")
    # MultiClaim trial sample (SemEval-2025 T7): all 50 fact-checks, the 35 tuning posts
    mc = SHARED / "semeval2025_task7_sample"
    for name in ("factchecks", "queries"):
        with open(OUT / "multiclaim" / f"{name}.jsonl", "w", encoding="utf-8") as fh:
            for r in rows(mc / f"{name}.jsonl"):
                fh.write(json.dumps(dict(r, id=f"mc-{r['id']}"), ensure_ascii=False) + "\n")
    with open(OUT / "multiclaim" / "qrels.jsonl", "w", encoding="utf-8") as fh:
        for r in rows(mc / "qrels.jsonl"):
            fh.write(json.dumps(dict(r, query_id=f"mc-{r['query_id']}",
                                     factcheck_id=f"mc-{r['factcheck_id']}"), ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
