"""What a tipline says (``strings.json``: per tenant and language), the one place a reply's words
come from. A tenant's strings, then the packaged ``default`` tenant's, in the user's language,
then the channel's default language, then English."""
from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from plugin.errors import BadInput

FILE = Path(__file__).with_name("strings.json")
FALLBACK = "en"
KEYS = ("greeting", "checking", "results", "result_line", "ask_helped", "yes", "no", "thanks",
        "desk_will_look", "desk_answer", "stopped", "unsupported")


@lru_cache(maxsize=4)
def load(extra: str | None = None) -> dict[str, dict[str, dict[str, str]]]:
    """``{tenant: {lang: {key: text}}}``: the packaged file, with an operator's file over it."""
    tenants: dict[str, dict[str, dict[str, str]]] = json.loads(FILE.read_text(encoding="utf-8"))["tenants"]
    if extra:
        try:
            theirs = json.loads(Path(extra).read_text(encoding="utf-8"))["tenants"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise BadInput(f"FACTSIEVE_TIPLINE_STRINGS_PATH {extra!r} is not a strings file "
                           f'({{"tenants": {{tenant: {{lang: {{key: text}}}}}}}}): {exc}') from None
        for tenant, langs in theirs.items():
            for lang, words in (langs or {}).items():
                unknown = set(words or {}) - set(KEYS)
                if unknown:
                    raise BadInput(f"tipline strings for {tenant}/{lang}: unknown keys {sorted(unknown)}")
                tenants.setdefault(tenant, {}).setdefault(lang, {}).update(words or {})
    return tenants


def language(tenants: Mapping[str, Any], tenant: str, wanted: str | None, default: str) -> str:
    """The language a reply is written in: the user's when the tenant (or the default tenant)
    has strings for it, else the channel's default, else English."""
    for lang in (wanted, (wanted or "").split("-")[0].split("_")[0], default):
        if lang and (lang in tenants.get(tenant, {}) or lang in tenants["default"]):
            return lang
    return FALLBACK


def text(tenants: Mapping[str, Any], tenant: str, lang: str, key: str, **values: Any) -> str:
    """One string, filled; the first of tenant/lang, default/lang, tenant/en, default/en."""
    for t, la in ((tenant, lang), ("default", lang), (tenant, FALLBACK), ("default", FALLBACK)):
        found = tenants.get(t, {}).get(la, {}).get(key)
        if found:
            return str(found).format(**values) if values else str(found)
    raise KeyError(key)
