"""A verification's result as one typed record, and its parts: what ``Verifier.verify`` returns.

``VerificationResult`` is built in one place (``Verifier.verify``) from the request, the
strategy's :class:`Outcome` and what the run spent; the strategies build their ``Outcome``
(``verifier``, ``lookup``, ``cited``). Nothing in between handles a dict: the JSON every channel
shares (job result, ``factsieve verify --json``, the ``claim.verified`` webhook) comes from
``to_dict()`` at those edges, byte for byte the shape the result had as a dict, key order
included (``tests/unit/verify/test_result_snapshot.py``). An optional part is left out of the
JSON when it is ``None``, as its key was before.

The question–answer pairs stay mappings: they are what the prompts, the verdict model and a
dataset's gold evidence read and give (``question``, ``answer``, ``source_url``,
``passage_id``; the cited strategy's passages add ``answer_kind`` and the stance), and the
result shows them as given.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any, ClassVar

#: The stages whose result shows the fact-check the lookup read (``match``, ``null`` when none
#: matched at all): a fact-check answered, or a lookup-only configuration found none sure enough.
LOOKUP_STAGES = ("previously-fact-checked", "lookup")


@dataclass(frozen=True)
class Statement:
    """One sentence of the justification and the evidence items it cites (1-based)."""

    text: str
    sources: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "sources": list(self.sources)}


@dataclass(frozen=True)
class EvidenceCitation:
    """A cited question–answer pair (or passage): its number, page and question."""

    kind: ClassVar[str] = "evidence"
    n: int
    url: str | None
    passage_id: str | None
    question: str

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "kind": self.kind, "url": self.url, "passage_id": self.passage_id,
                "question": self.question}


@dataclass(frozen=True)
class FactCheckRef:
    """A published fact-check that answers the claim, as its match shows it."""

    id: str | None
    url: str | None
    title: str | None
    claim: str | None
    publisher: str | None
    published_at: str | None
    lang: str | None
    score: float | None
    rating: str | None

    @classmethod
    def of(cls, match: Mapping[str, Any]) -> FactCheckRef:
        return cls(**{k: match.get(k) for k in cls.__dataclass_fields__})

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "url": self.url, "title": self.title, "claim": self.claim,
                "publisher": self.publisher, "published_at": self.published_at, "lang": self.lang,
                "score": self.score, "rating": self.rating}


@dataclass(frozen=True)
class FactCheckCitation:
    """The fact-check a previously-fact-checked result cites."""

    kind: ClassVar[str] = "fact-check"
    n: int
    fact_check: FactCheckRef

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "kind": self.kind, **self.fact_check.to_dict()}


Citation = EvidenceCitation | FactCheckCitation


def justification(statements: Sequence[Statement]) -> str:
    """The statements written out, each followed by its sources: ``text [1, 2] text [3]``."""
    return " ".join(f"{s.text} [{', '.join(str(n) for n in s.sources)}]" for s in statements)


@dataclass(frozen=True)
class ClosestMatch:
    """The best fact-check the lookup found when it did not clear the threshold, and how close
    it came (``similarity``: its kNN score, ``plugin.verify.lookup.similarity``)."""

    id: str | None
    url: str | None
    claim: str | None
    score: float | None
    confidence: float | None
    similarity: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "url": self.url, "claim": self.claim, "score": self.score,
                "confidence": self.confidence, "similarity": self.similarity}


@dataclass(frozen=True)
class Blend:
    """The two ratings a blended verdict (``verdict_source`` ``llm+head``) came from, and the
    verdict model's weight (``plugin.verify.blend``)."""

    llm: Mapping[str, float]
    head: Mapping[str, float]
    weight: float


@dataclass(frozen=True)
class Outcome:
    """A strategy's part of the result: the verdict, its ratings, the evidence, the cited
    statements, where the verdict came from and why the strategy stopped. The justification is
    the statements written out, each with its sources in brackets."""

    verdict: str
    label_scores: Mapping[str, float]
    statements: tuple[Statement, ...]
    qa_pairs: tuple[Mapping[str, Any], ...]
    citations: tuple[Citation, ...]
    stage: str
    stopped_because: str
    verdict_source: str
    #: ``"passages"`` for the cited strategy, whose evidence is passages, not question–answer pairs
    evidence_form: str | None = None
    note: str | None = None
    #: the lookup stages' match (:data:`LOOKUP_STAGES`); other stages show none
    match: FactCheckRef | ClosestMatch | None = None
    #: the LLM's statements dropped for citing no real evidence item (the LLM's verdicts only)
    uncited_statements_dropped: int | None = None
    fallback_reason: str | None = None
    #: how many passages a one-step strategy retrieved
    retrieved: int | None = None
    blend: Blend | None = None
    #: the qa-loop's last evidence summary
    evidence_summary: str | None = None

    @property
    def justification(self) -> str:
        return justification(self.statements)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "verdict": self.verdict, "label_scores": dict(self.label_scores),
            "justification": self.justification, "statements": [s.to_dict() for s in self.statements],
            "qa_pairs": [dict(p) for p in self.qa_pairs], "citations": [c.to_dict() for c in self.citations]}
        if self.evidence_form is not None:
            out["evidence_form"] = self.evidence_form
        out.update(stage=self.stage, stopped_because=self.stopped_because, verdict_source=self.verdict_source)
        if self.note is not None:
            out["note"] = self.note
        if self.stage in LOOKUP_STAGES:
            out["match"] = self.match.to_dict() if self.match is not None else None
        for key in ("uncited_statements_dropped", "fallback_reason", "retrieved"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.blend is not None:
            out.update(label_scores_llm=dict(self.blend.llm), label_scores_head=dict(self.blend.head),
                       head_weight=self.blend.weight)
        if self.evidence_summary is not None:
            out["evidence_summary"] = self.evidence_summary
        return out


@dataclass(frozen=True)
class Tokens:
    """What a verification's LLM calls cost (a call that gave invalid output counts too)."""

    prompt: int = 0
    completion: int = 0
    calls: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"prompt": self.prompt, "completion": self.completion, "calls": self.calls}


@dataclass(frozen=True)
class VerificationResult:
    """One claim's verification: the claim and configuration, the strategy's :class:`Outcome`,
    and where the time and tokens went (``timings_ms`` per step, and ``total``)."""

    claim: str
    date: date | None
    config: str
    strategy: str
    outcome: Outcome
    timings_ms: Mapping[str, float]
    tokens: Tokens
    budget_s: float
    prompt_versions: Mapping[str, int]
    #: what the run noticed on the way (a lookup skipped, and why)
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """The result's JSON, as every channel shows it."""
        out: dict[str, Any] = {"claim": self.claim, "date": self.date.isoformat() if self.date else None,
                               "config": self.config, "strategy": self.strategy, **self.outcome.to_dict(),
                               "timings_ms": dict(self.timings_ms), "tokens": self.tokens.to_dict(),
                               "budget_s": self.budget_s, "prompt_versions": dict(self.prompt_versions)}
        if self.notes:
            out["notes"] = list(self.notes)
        return out

