"""Few-shot examples chosen by BM25 from the tuning split, as the AVeriTeC shared-task systems
(HerO, InFact) choose them: the solved claims most similar in wording to the one at hand.

The pool is a JSON Lines file of ``{id, claim, label, justification, qa: [{question, answer}]}``;
the packaged one (``fewshot/averitec_dev_tuning.jsonl``) holds 40 claims of the AVeriTeC dev
tuning split, 10 per label (CC BY-NC 4.0, see ``fewshot/README.md``). A claim never gets itself
as an example (``exclude``), so scoring on the tuning split does not read its own answer.
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an and are as at be by for from has have in is it its of on or that the this "
                  "to was were will with".split())


def tokens(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


def bm25_scores(query: Sequence[str], docs: Sequence[Sequence[str]], *, k1: float = 1.5,
                b: float = 0.75) -> list[float]:
    """Okapi BM25 of ``query`` against each tokenised doc:
    Σ_t idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·|d|/avgdl)), idf(t) = ln(1 + (N − n_t + .5)/(n_t + .5))."""
    n = len(docs)
    if n == 0:
        return []
    avgdl = sum(len(d) for d in docs) / n or 1.0
    df = Counter(t for d in docs for t in set(d))
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in set(query)}
    scores = []
    for d in docs:
        tf = Counter(d)
        norm = k1 * (1 - b + b * len(d) / avgdl)
        scores.append(sum(idf[t] * tf[t] * (k1 + 1) / (tf[t] + norm) for t in set(query) if t in tf))
    return scores


@dataclass(frozen=True)
class FewShotPool:
    examples: tuple[dict[str, Any], ...]

    def select(self, claim: str, n: int, *, exclude: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
        """The ``n`` examples most similar to ``claim`` by BM25 (ties: pool order)."""
        if n <= 0:
            return []
        pool = [e for e in self.examples if e["id"] not in exclude and e["claim"] != claim]
        scores = bm25_scores(tokens(claim), [tokens(e["claim"]) for e in pool])
        order = sorted(range(len(pool)), key=lambda i: -scores[i])
        return [pool[i] for i in order[:n]]


def packaged_pool_path() -> Path:
    return Path(str(resources.files("plugin.verify").joinpath("fewshot/averitec_dev_tuning.jsonl")))


@cache
def load_pool(path: str | None = None) -> FewShotPool:
    text = Path(path or packaged_pool_path()).read_text(encoding="utf-8")
    return FewShotPool(tuple(json.loads(line) for line in text.splitlines() if line.strip()))
