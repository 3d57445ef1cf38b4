"""``factsieve train-reranker skip``: from which first-stage confidence a live match may keep its
fused order, because reranking it was measured to change next to nothing.

A cross-encoder costs ~11 ms a pair on 2 cores (fp32), so reranking a head of 10 costs five times
the first stage. Where the first stage is sure of its first candidate, the reranker mostly agrees:
on the gate's posts (``gate.gate_matches``: never trained on, never reported) a head whose first
candidate had a confidence of 0.9 or more was right 98 % of the time before reranking and after.
So a live match (one with a budget) skips the reranker above a threshold (``Rerank.skip_at``,
``rerank_gate.sure_enough``), and jobs, which have time, rerank every head.

**The rule.** Only heads the served gate reranks count (its table's row for the post's language
and head kind says rerank). For each candidate threshold, the heads at or above it keep their
first-stage order and the others are reranked; the threshold chosen is the lowest whose MAP@5,
pooled over every post, is at most ``MAX_LOSS`` below reranking them all. The table also gives
each dataset's loss and the share skipped, so a threshold that holds only on average shows.
"""
from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from plugin.lab.evaluate.metrics import average_precision_at_k

#: the thresholds walked
THRESHOLDS = (0.5, 0.7, 0.8, 0.85, 0.9, 0.95, 0.97, 0.99)
#: the pooled MAP@5 a threshold may cost against reranking every head
MAX_LOSS = 0.001


def skip_table(samples: Sequence[tuple[str, float | None, float, float]],
               thresholds: Sequence[float] = THRESHOLDS, max_loss: float = MAX_LOSS) -> dict[str, Any]:
    """The table and the chosen threshold from ``(dataset, first-stage confidence, first-stage
    AP@5, reranked AP@5)`` per reranked head (pure). A head without a confidence is never
    skipped."""
    if not samples:
        return {"skip_at": None, "posts": 0, "table": [], "max_loss": max_loss}
    full = statistics.fmean(r for _, _, _, r in samples)
    by_set: dict[str, list[tuple[float | None, float, float]]] = defaultdict(list)
    for name, conf, first, reranked in samples:
        by_set[name].append((conf, first, reranked))
    table = []
    for at in thresholds:
        def served(rows: Sequence[tuple[float | None, float, float]]) -> float:
            return statistics.fmean(f if c is not None and c >= at else r for c, f, r in rows)

        skipped = sum(1 for _, c, _, _ in samples if c is not None and c >= at)
        got = served([(c, f, r) for _, c, f, r in samples])
        table.append({"skip_at": at, "skipped": round(skipped / len(samples), 4), "MAP@5": round(got, 4),
                      "loss": round(full - got, 4),
                      "per_dataset": {name: {"posts": len(rows), "loss": round(statistics.fmean(r for _, _, r in rows)
                                                                                - served(rows), 4),
                                             "skipped": round(sum(1 for c, _, _ in rows if c is not None and c >= at)
                                                              / len(rows), 4)}
                                      for name, rows in sorted(by_set.items())}})
    ok = [row for row in table if row["loss"] <= max_loss]
    return {"skip_at": ok[0]["skip_at"] if ok else None, "max_loss": max_loss, "posts": len(samples),
            "MAP@5": {"first_stage": round(statistics.fmean(f for _, _, f, _ in samples), 4), "reranked": round(full, 4)},
            "rule": "the lowest first-stage confidence from which keeping the fused order costs at most max_loss MAP@5 "
                    "against reranking every head the gate reranks, pooled over the posts",
            "table": table}


def measure_skip(settings: Any, name: str, adapters: Path, datasets: Sequence[Any], *,
                 config: str = "hybrid-rerank", per_lang: int = 60) -> dict[str, Any]:
    """``skip_table`` over the gate queries of ``datasets`` (``gate.gate_matches``), each head
    counted where the adapter's measured gate reranks it."""
    from plugin.embedding.adapter import load_adapter
    from plugin.lab.reranker.gate import gate_matches
    from plugin.models import Fused, Hit
    from plugin.search.rerank import GATE_KEY
    from plugin.search.rerank_gate import measured_gate

    gate = load_adapter(name, adapters).manifest.get(GATE_KEY) or {}
    samples: list[tuple[str, float | None, float, float]] = []
    for dataset, q, first, reranked in gate_matches(settings, name, adapters, datasets, config=config,
                                                     per_lang=per_lang):
        lang = q.get("lang") or first.lang or "?"
        head = [Fused(id=m["id"], score=m["score"], rank=i, contributions={"q": Hit(m["id"], m["score"], i, "q",
                                                                                    {"lang": m.get("lang")})})
                for i, m in enumerate(first.matches, start=1)]
        if not first.matches or measured_gate(gate, lang, head) is not None:
            continue
        relevant = dataset.qrels["all"][str(q["id"])]
        samples.append((dataset.name, first.matches[0].get("confidence"),
                        average_precision_at_k([m["id"] for m in first.matches], relevant, 5),
                        average_precision_at_k([m["id"] for m in reranked.matches], relevant, 5)))
    return {**skip_table(samples), "reranker": name, "config": config, "measured_on": sorted({d.name for d in datasets})}
