"""Query variants written by an LLM, for multi-query matching (REVEAL's weighted multi-query RRF):
``hyde`` — the claim a fact-check addressing the post would state (HyDE: search with a
hypothetical document), and ``question`` — the question a fact-checker would ask of the post.

They cost one LLM call each per match (hundreds of milliseconds with a small local model,
seconds with a large one), so only configurations that name them pay it, and the live
``/v1/match`` path refuses them unless an LLM is configured. The prompts are files
(``prompts/*.md``) like verification's.
"""
from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

from plugin.errors import LLMOutputInvalid
from plugin.llm import prompts

PACKAGE = "plugin.search"


class HydeClaim(BaseModel):
    text: Annotated[str, Field(max_length=200)]


class Question(BaseModel):
    question: Annotated[str, Field(max_length=200)]


#: variant name → (prompt, schema, the field that holds the text)
GENERATED = {"hyde": ("hyde", HydeClaim, "text"), "question": ("question", Question, "question")}


class LLMVariants:
    """``generate(variant, text, lang)`` → the variant's text, from the LLM (tokens counted)."""

    def __init__(self, llm: Any, max_tokens: int = 256) -> None:
        self.llm = llm
        self.max_tokens = max_tokens

    def __call__(self, variant: str, text: str, lang: str | None) -> str | None:
        """The variant's text, or ``None`` when the LLM's answer did not fit its schema twice:
        the match then runs without that variant (an unreachable LLM still fails the match)."""
        prompt, schema, field = GENERATED[variant]
        try:
            reply = self.llm.chat(prompts.messages(PACKAGE, prompt, text=text[:2000], lang=lang or "unknown"),
                                  schema=schema, max_tokens=self.max_tokens)
        except LLMOutputInvalid:
            return None
        return getattr(reply.parsed, field).strip() or None
