"""What each LLM step of verification must return, as pydantic models.

The client sends each model's JSON schema as ``response_format`` (llama.cpp turns it into a
grammar; vLLM and hosted APIs use structured outputs) and validates the answer against it, so a
step either yields one of these or fails with the model's raw output in the error. Lengths and
scores are *clamped* here rather than refused: a 140-character question is still a question,
and refusing it would burn the one retry on form instead of content.
"""
from __future__ import annotations

from enum import Enum
from functools import cache
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, Field, create_model, model_validator

from plugin.models import Verdict

#: The four verdict labels, in the order prompts list them.
LABELS = tuple(v.value for v in Verdict)
#: The JSON keys label ratings use (``label_scores`` keys in results are the labels themselves).
SCORE_KEYS = {"supported": Verdict.SUPPORTED, "refuted": Verdict.REFUTED,
              "not_enough_evidence": Verdict.NOT_ENOUGH_EVIDENCE,
              "conflicting": Verdict.CONFLICTING}


def _clip(limit: int):
    def clip(v: Any) -> Any:
        return " ".join(v.split())[:limit] if isinstance(v, str) else v
    return BeforeValidator(clip)


def _unit(v: Any) -> Any:
    """Ratings are probabilities; a model that writes 80 means 0.8, one that writes -1 means 0."""
    if isinstance(v, (int, float)):
        v = float(v) / 100 if v > 1 else float(v)
        return min(max(v, 0.0), 1.0)
    return v


#: Lengths are in the schema too (``maxLength``), so a grammar-constrained server cannot run a
#: string on until ``max_tokens`` cuts the JSON short. In characters, and a small model's
#: tokenizer may spend a token per character (digits): keep them under the steps' ``max_tokens``.
Short = Annotated[str, _clip(200), Field(max_length=200)]
Long = Annotated[str, _clip(300), Field(max_length=300)]
Unit = Annotated[float, BeforeValidator(_unit)]


class VerdictLabel(str, Enum):
    SUPPORTED = Verdict.SUPPORTED.value
    REFUTED = Verdict.REFUTED.value
    NOT_ENOUGH_EVIDENCE = Verdict.NOT_ENOUGH_EVIDENCE.value
    CONFLICTING = Verdict.CONFLICTING.value


class LabelScores(BaseModel):
    """A rating per label (0–1); the verdict step and the evidence summary both give one."""

    supported: Unit
    refuted: Unit
    not_enough_evidence: Unit
    conflicting: Unit

    def by_label(self) -> dict[str, float]:
        return {SCORE_KEYS[k].value: round(float(v), 4) for k, v in self.model_dump().items()}


class NextQuestion(BaseModel):
    """The next question whose answer would most help decide the claim."""

    question: Short


class HydePassage(BaseModel):
    """A hypothetical passage that would answer the question (HyDE): searched with, never cited."""

    passage: Long


class GroundedAnswer(BaseModel):
    """An answer taken from the numbered passages; ``source`` is the passage's number, 0 when
    none of them answers the question."""

    answer: Short
    source: int = Field(ge=0)


class EvidenceSummary(BaseModel):
    """What the evidence so far establishes, and how it leans (the loop stops once decisive)."""

    summary: Long
    label_scores: LabelScores


class Statement(BaseModel):
    """One sentence of a justification and the numbered evidence items it rests on."""

    text: Short
    sources: list[int] = Field(min_length=1, max_length=5)


#: The prompts ask for 1-3 statements, and the schema says so: each statement bounds the
#: answer's size, which ``max_tokens`` must hold (3 of 200 characters and the ratings fit 384
#: tokens; 5 did not always, for a model that fills every string).
MAX_STATEMENTS = 3


def bounded(item: type[BaseModel], n: int) -> Any:
    """A list of 1..``n`` items, ``maxItems`` in the schema the server constrains with; the
    extra items of a server that ignores the schema are cut, not refused."""
    return Annotated[list[item], BeforeValidator(lambda v: v[:n] if isinstance(v, list) else v),
                     Field(min_length=1, max_length=n)]


Statements = bounded(Statement, MAX_STATEMENTS)


def ratings_problem(scores: dict[str, float], verdict: str) -> str | None:
    """Why ratings do not support ``verdict``, or ``None`` when they do: the one rule for an
    LLM's verdict (no bluffing). Degenerate ratings are invalid output: every label rated 0
    (the model rated nothing), or the chosen label rated under another label (a tie with the
    highest is fine). ``scores`` maps each label to its rating."""
    top = max(scores.values(), default=0.0)
    if top <= 0.0:
        return "every label is rated 0: the ratings support no verdict"
    own = scores.get(verdict, 0.0)
    if own < top:
        best = max(scores, key=lambda k: scores[k])
        return (f"the verdict {verdict!r} is rated {own:.2f}, under {best!r} at {top:.2f}: "
                "the verdict must be the label with the highest rating")
    return None


class _SupportedVerdict(BaseModel):
    """A verdict with the ratings it rests on, checked by :func:`ratings_problem` as part of
    the schema: the LLM client's one schema retry (the reason shown to the model) and its
    ``LLMOutputInvalid`` after it apply to unsupported verdicts as to malformed JSON. It declares
    no fields, so the schema's field order (what a grammar makes the model write first) is each
    step's own."""

    @model_validator(mode="after")
    def _ratings_support_the_verdict(self) -> Any:
        problem = ratings_problem(self.label_scores.by_label(), self.verdict.value)  # type: ignore[attr-defined]
        if problem:
            raise ValueError(problem)
        return self


class VerdictOut(_SupportedVerdict):
    label_scores: LabelScores
    verdict: VerdictLabel
    statements: Statements


class QAItem(BaseModel):
    question: Short
    answer: Short
    source: int = Field(ge=0)


#: The AVeriTeC scorer reads the first 10 pairs; more is never asked for.
MAX_PAIRS = 10


class SingleCallOut(_SupportedVerdict):
    """The single-call strategy: question–answer pairs from the passages, ratings, verdict and a
    cited justification in one answer."""

    qa_pairs: bounded(QAItem, MAX_PAIRS)
    label_scores: LabelScores
    verdict: VerdictLabel
    statements: Statements


@cache
def single_call_schema(max_pairs: int = MAX_PAIRS) -> type[SingleCallOut]:
    """``SingleCallOut`` with at most ``max_pairs`` pairs, in the schema the server constrains
    the answer with (``maxItems``) as well as in validation.

    Why: the answer's size is bounded by its schema, and ``max_tokens`` must hold it. Ten pairs
    of 200-character strings are ~1,000 tokens from a small model that fills every string (it
    copies passages), so a deployment with a short ``max_tokens`` asks for fewer pairs instead
    of having its answers cut mid-JSON.
    """
    if not 1 <= max_pairs <= MAX_PAIRS:
        raise ValueError(f"max_pairs must be 1..{MAX_PAIRS}, not {max_pairs}")
    if max_pairs == MAX_PAIRS:
        return SingleCallOut
    return create_model(f"SingleCallOut{max_pairs}", __base__=SingleCallOut,
                        qa_pairs=(bounded(QAItem, max_pairs), ...))
