"""The AVeriTeC data layout (``claims.jsonl`` as in ``../shared/data/averitec_dev``): gold
question–answer evidence as the verdict step reads it, gold answers as an evidence pool, and the
few-shot records the prompts carry.
"""
from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from plugin.errors import BadInput
from plugin.verify.scoring import NO_ANSWER


def read_claims(path: Path) -> list[dict[str, Any]]:
    """Claims of a ``claims.jsonl`` (a folder holding one, or the file)."""
    file = path / "claims.jsonl" if path.is_dir() else path
    if not file.exists():
        raise BadInput(f"no claims file at {str(file)!r}: pass --dataset DIR holding claims.jsonl")
    claims = []
    for n, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                claims.append(json.loads(line))
            except ValueError:
                raise BadInput(f"{file}: line {n} is not JSON") from None
    return claims


def answer_text(answer: Mapping[str, Any]) -> str:
    """A gold answer as one string (a Boolean one with its explanation, as the scorer joins it)."""
    text = str(answer.get("answer") or "")
    if answer.get("answer_type") == "Boolean" and answer.get("boolean_explanation"):
        text += ". " + str(answer["boolean_explanation"])
    return text


def gold_qa_pairs(claim: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The claim's gold evidence as QA pairs, one per answer (``--evidence gold``)."""
    pairs = []
    for q in claim.get("questions") or []:
        answers = q.get("answers") or []
        for a in answers if isinstance(answers, list) else [answers]:
            pairs.append({"question": q["question"], "answer": answer_text(a),
                          "source_url": a.get("source_url"), "passage_id": None})
        if not answers:
            pairs.append({"question": q["question"], "answer": NO_ANSWER, "source_url": None,
                          "passage_id": None})
    return pairs


def gold_answer_documents(claims: list[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every claim's gold answers as evidence documents with their source URLs (the
    ``gold-answers`` pool: the AVeriTeC knowledge store is not obtainable here). Dated the day
    before their claim, since annotators found them as evidence available at claim time. Their
    questions are left out: a passage titled with its gold question would leak it into Q-only."""
    from datetime import date, timedelta

    for claim in claims:
        day = date.fromisoformat(claim["date"]) - timedelta(days=1) if claim.get("date") else None
        for i, pair in enumerate(gold_qa_pairs(claim)):
            if pair["answer"] == NO_ANSWER or not str(pair["source_url"] or "").startswith(("http://", "https://")):
                continue
            # no title: the gold question would hand the answer's question to every strategy
            yield {"url": pair["source_url"], "title": None, "text": pair["answer"],
                   "published_at": day.isoformat() if day else None, "lang": "en",
                   "source": "gold-answers", "claim_id": claim.get("id"), "position_hint": i}


def fewshot_record(claim: Mapping[str, Any], max_pairs: int = 4) -> dict[str, Any]:
    """A compact few-shot example: claim, label, justification and a few QA pairs."""
    return {"id": claim["id"], "claim": claim["claim"], "label": claim["label"],
            "justification": claim.get("justification") or "",
            "qa": [{"question": p["question"], "answer": p["answer"][:300]}
                   for p in gold_qa_pairs(claim)[:max_pairs]]}
