"""The OpenSearch bodies in ``index_templates/`` as data: read, fill placeholders, and the facts
the code takes from them rather than repeating (the analysed languages).

Pure and cheap (no client import), so query builders and ingestion can read it.
"""
from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


def cosine_of(score: float) -> float:
    """OpenSearch's Lucene ``cosinesimil`` score, ``(1 + cos) / 2``, back to the cosine."""
    return 2.0 * float(score) - 1.0


@cache
def _read(name: str) -> str:
    return resources.files("index_templates").joinpath(f"{name}.json").read_text(encoding="utf-8")


def load_template(name: str) -> dict[str, Any]:
    """Read one JSON body from the ``index_templates`` package, e.g. ``component/factsieve-knn``."""
    return json.loads(_read(name))  # a fresh dict each time: callers render and change it


def render(obj: Any, values: dict[str, Any]) -> Any:
    """Fill ``{{name}}`` placeholders; a string that is exactly one placeholder takes the value's
    own type (so ``"{{dimension}}"`` becomes the integer 384)."""
    if isinstance(obj, dict):
        return {render(k, values): render(v, values) for k, v in obj.items()}
    if isinstance(obj, list):
        return [render(v, values) for v in obj]
    if isinstance(obj, str):
        whole = _PLACEHOLDER.fullmatch(obj)
        if whole:
            return values[whole.group(1)]
        return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), obj)
    return obj



#: Languages with a dedicated analysed sub-field (``claim_i18n.<lang>``, ``title_i18n.<lang>``)
#: in the fact-check template; every other language uses the language-neutral fields.
ANALYZED_LANGS: tuple[str, ...] = tuple(
    load_template("component/factsieve-factcheck-fields")["template"]["mappings"]["properties"]
    ["claim_i18n"]["properties"])
