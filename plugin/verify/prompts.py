"""Prompts as files (``prompts/*.md``: versioned, reviewed like code) and the few-shot examples
they carry.

A prompt file has a first-line comment naming it and its version, then ``## system`` and
``## user`` sections; ``$name`` placeholders are filled with ``string.Template`` (so JSON braces
in the text need no escaping). A missing value is an error, never an empty hole in a prompt.
"""
from __future__ import annotations

import re
from functools import cache
from importlib import resources
from string import Template
from typing import Any

_SECTION = re.compile(r"^## (system|user)\s*$", re.MULTILINE)
_VERSION = re.compile(r"version (\d+)")


@cache
def load(name: str) -> tuple[str, str, int]:
    """``(system, user, version)`` of ``prompts/<name>.md``."""
    text = resources.files("plugin.verify").joinpath(f"prompts/{name}.md").read_text(encoding="utf-8")
    parts = _SECTION.split(text)
    sections = dict(zip(parts[1::2], (p.strip() for p in parts[2::2])))
    version = _VERSION.search(parts[0])
    return sections["system"], sections["user"], int(version.group(1)) if version else 0


def messages(name: str, **values: Any) -> list[dict[str, str]]:
    """The chat messages of prompt ``name`` with its placeholders filled."""
    system, user, _ = load(name)
    return [{"role": "system", "content": system},
            {"role": "user", "content": Template(user).substitute(values).strip()}]


def versions() -> dict[str, int]:
    """Every prompt's version, recorded with results so a score names the prompts behind it."""
    folder = resources.files("plugin.verify").joinpath("prompts")
    names = sorted(p.name[:-3] for p in folder.iterdir() if p.name.endswith(".md"))
    return {n: load(n)[2] for n in names}


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
