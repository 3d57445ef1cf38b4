"""Verification's prompts (``prompts/*.md``: versioned, reviewed like code, read through
``plugin.llm.prompts``) and the few-shot examples and numbered evidence they carry."""
from __future__ import annotations

from typing import Any

from plugin.llm import prompts as _files

PACKAGE = "plugin.verify"


def load(name: str) -> tuple[str, str, int]:
    """``(system, user, version)`` of ``prompts/<name>.md``."""
    return _files.load(PACKAGE, name)


def messages(name: str, **values: Any) -> list[dict[str, str]]:
    """The chat messages of prompt ``name`` with its placeholders filled."""
    return _files.messages(PACKAGE, name, **values)


def versions() -> dict[str, int]:
    """Every prompt's version, recorded with results so a score names the prompts behind it."""
    return _files.versions(PACKAGE)


def numbered(items: list[str], empty: str = "(none yet)") -> str:
    return "\n".join(f"[{i}] {t}" for i, t in enumerate(items, start=1)) or empty


def qa_lines(pairs: list[dict[str, Any]], empty: str = "(none yet)") -> str:
    """Question–answer pairs as numbered evidence lines (the numbers statements cite)."""
    return numbered([f"Q: {p['question']} A: {p['answer']}" for p in pairs], empty)


def example_block(examples: list[dict[str, Any]]) -> str:
    """Few-shot examples from the tuning split: claim, evidence, verdict, justification."""
    if not examples:
        return ""
    blocks = []
    for ex in examples:
        blocks.append(f"Example claim: {ex['claim']}\nEvidence:\n{qa_lines(ex['qa'])}\n"
                      f"Verdict: {ex['label']}\nJustification: {ex['justification']}")
    return "Solved examples:\n\n" + "\n\n".join(blocks) + "\n\nNow the claim to check.\n"
