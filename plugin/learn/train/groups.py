"""Training groups: which queries of a dataset may be trained on, and one group per (training
query, relevant fact-check) with the first stage's hard negatives, mined by running the matcher
the reranker will sit behind. The tenant reranker update builds its fixed evaluation set with
these; the lab's ``train-reranker mine`` writes them to disk (``plugin.lab.reranker.groups``).
"""
from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Any

from plugin.errors import BadInput

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainingGroup:
    """One positive fact-check for a training query, with the first stage's hard negatives
    (non-relevant passages, best-ranked first)."""

    query_id: str
    query: str
    positive: str
    negatives: tuple[str, ...]


def sha1_digit(query_id: str) -> str:
    return hashlib.sha1(str(query_id).encode("utf-8")).hexdigest()[0]


def training_query_ids(queries: list[dict[str, Any]]) -> tuple[list[str], str]:
    """The ids of the queries the reranker may train on, and the rule that chose them."""
    if any("split" in q for q in queries):
        ids = [str(q["id"]) for q in queries if q.get("split") == "train"]
        rule = "queries with split == 'train'"
    else:
        ids = [str(q["id"]) for q in queries if sha1_digit(str(q["id"])) in "0123456789"]
        rule = "queries whose sha1(id) hex digest starts with 0-9"
    if not ids:
        raise BadInput(f"the dataset has no training queries ({rule})")
    return ids, rule


def mine_groups(matcher: Any, store: Any, alias: str, queries: list[dict[str, Any]],
                qrels: dict[str, set[str]], train_ids: list[str], *, depth: int = 50
                ) -> list[TrainingGroup]:
    """Run the first stage for every training query; one group per (query, relevant fact-check).
    Passages are ``rerank.passage`` of each hit and queries are normalised, as ``Matcher``
    hands them to a reranker."""
    from plugin.models import Mode
    from plugin.search.matcher import MatchRequest
    from plugin.search.normalize import normalize_post
    from plugin.search.rerank import passage

    allowed = set(train_ids)
    groups: list[TrainingGroup] = []
    positives: dict[str, str | None] = {}
    for q in queries:
        qid = str(q["id"])
        if qid not in allowed or not qrels.get(qid):
            continue  # never look at a query outside the training split
        result = matcher.match(MatchRequest(text=q["text"], lang=q.get("lang"), mode=Mode.CROSS,
                                            k=depth))
        relevant = qrels[qid]
        negatives = tuple(passage(m) for m in result.matches if m["id"] not in relevant)
        text = normalize_post(q["text"]) or q["text"].strip()
        for doc_id in sorted(relevant):
            if doc_id not in positives:
                src = store.find(alias, doc_id)
                positives[doc_id] = passage(src) if src else None
            if positives[doc_id] is None:
                log.warning("query %s: relevant fact-check %s is not in %s", qid, doc_id, alias)
                continue
            groups.append(TrainingGroup(qid, text, positives[doc_id], negatives))
    return groups
