"""Prompts as files, for every package that talks to the LLM: ``<package>/prompts/<name>.md``.

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
def load(package: str, name: str) -> tuple[str, str, int]:
    """``(system, user, version)`` of ``<package>/prompts/<name>.md``."""
    text = resources.files(package).joinpath(f"prompts/{name}.md").read_text(encoding="utf-8")
    parts = _SECTION.split(text)
    sections = dict(zip(parts[1::2], (p.strip() for p in parts[2::2])))
    version = _VERSION.search(parts[0])
    return sections["system"], sections["user"], int(version.group(1)) if version else 0


def messages(package: str, name: str, **values: Any) -> list[dict[str, str]]:
    """The chat messages of a prompt with its placeholders filled."""
    system, user, _ = load(package, name)
    return [{"role": "system", "content": system},
            {"role": "user", "content": Template(user).substitute(values).strip()}]


def versions(package: str) -> dict[str, int]:
    """Every prompt's version in a package, recorded with results."""
    folder = resources.files(package).joinpath("prompts")
    names = sorted(p.name[:-3] for p in folder.iterdir() if p.name.endswith(".md"))
    return {n: load(package, n)[2] for n in names}
