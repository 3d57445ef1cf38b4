"""Tenant rules: which matched posts become review items, and what a tenant opted into.

The one place these choices are read. Rules are data: a JSON file named by
``FACTSIEVE_REVIEW_RULES_PATH`` (``Settings.review_rules_path``), ``{"default": {...}, "tenants":
{"<tenant>": {...}}}``; a tenant's entry overrides the default field by field. Without a file
every tenant has ``TenantRules()``: every matched post is queued, posts without candidates too.
A file that does not parse, or names an unknown field or a bad value, is a ``BadInput`` naming
the file and the field (``factsieve init`` and every process that reads it stop there).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from plugin.errors import BadInput


@dataclass(frozen=True)
class TenantRules:
    #: make review items at all (a tenant that does not use the desk: ``false``)
    queue: bool = True
    #: queue only posts in these languages (empty: every language)
    langs: tuple[str, ...] = ()
    #: queue only posts whose best candidate's confidence is at least this (``None``: all)
    min_confidence: float | None = None
    #: queue posts the matcher found no candidate for (a reviewer may match one manually)
    without_candidates: bool = True
    #: matches above the tenant's auto-confirm tier are confirmed without a person
    #: (``plugin.learn``; decisions with origin ``auto``, shown in the desk's history)
    auto_confirm: bool = False
    #: send ``claim.trending`` when a claim gains this many posts within ``trending_window_hours``
    #: (``None``: no spread alerts; ``plugin.claims.trending``)
    trending_posts: int | None = None
    trending_window_hours: float = 24.0

    def queues(self, lang: str | None, best_confidence: float | None, has_candidates: bool) -> bool:
        """Whether a matched post with this language, best confidence and candidates (or
        none) becomes a review item (pure)."""
        if not self.queue or (self.langs and (lang or "") not in self.langs):
            return False
        if not has_candidates:
            return self.without_candidates
        return self.min_confidence is None or (best_confidence is not None
                                               and best_confidence >= self.min_confidence)


_FIELDS = {f.name for f in fields(TenantRules)}


def _tenant_rules(base: TenantRules, raw: Any, where: str) -> TenantRules:
    if not isinstance(raw, Mapping):
        raise BadInput(f"{where}: must be an object of rule fields ({', '.join(sorted(_FIELDS))})")
    changes: dict[str, Any] = {}
    for name, value in raw.items():
        if name not in _FIELDS:
            raise BadInput(f"{where}.{name}: unknown rule; valid: {', '.join(sorted(_FIELDS))}")
        if name in ("queue", "without_candidates", "auto_confirm"):
            if not isinstance(value, bool):
                raise BadInput(f"{where}.{name}: must be true or false")
        elif name == "langs":
            if not isinstance(value, list) or not all(isinstance(v, str) and 2 <= len(v) <= 8 for v in value):
                raise BadInput(f"{where}.langs: must be a list of language codes such as [\"en\", \"es\"]")
            value = tuple(v.lower() for v in value)
        elif name == "trending_posts":
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 2 <= value <= 10**6):
                raise BadInput(f"{where}.trending_posts: must be a whole number from 2 to 1000000, or null")
        elif name == "trending_window_hours":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.1 <= value <= 24 * 90:
                raise BadInput(f"{where}.trending_window_hours: must be a number of hours from 0.1 to 2160")
            value = float(value)
        elif name == "min_confidence":
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not 0.0 <= value <= 1.0):
                raise BadInput(f"{where}.min_confidence: must be a number from 0 to 1, or null")
        changes[name] = value
    return replace(base, **changes)


@dataclass(frozen=True)
class Rules:
    default: TenantRules = TenantRules()
    tenants: Mapping[str, TenantRules] = field(default_factory=dict)

    def for_tenant(self, tenant: str) -> TenantRules:
        return self.tenants.get(tenant, self.default)

    @classmethod
    def from_mapping(cls, data: Any, where: str = "rules") -> Rules:
        """Rules from parsed JSON (pure); a bad field is a ``BadInput`` naming it."""
        if not isinstance(data, Mapping):
            raise BadInput(f"{where}: must be an object with \"default\" and/or \"tenants\"")
        if extra := sorted(set(data) - {"default", "tenants"}):
            raise BadInput(f"{where}: unknown key {extra[0]!r}; valid: default, tenants")
        default = _tenant_rules(TenantRules(), data.get("default", {}), f"{where}.default")
        tenants = data.get("tenants", {})
        if not isinstance(tenants, Mapping):
            raise BadInput(f"{where}.tenants: must be an object of tenant name → rules")
        return cls(default, {str(t): _tenant_rules(default, r, f"{where}.tenants.{t}")
                             for t, r in tenants.items()})


def load_rules(path: str | None) -> Rules:
    """The rules in the JSON file at ``path`` (``None`` or empty: the defaults)."""
    if not path:
        return Rules()
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise BadInput(f"review rules {path}: cannot read it ({exc.strerror or exc})") from None
    except json.JSONDecodeError as exc:
        raise BadInput(f"review rules {path}: not JSON ({exc})") from None
    return Rules.from_mapping(data, where=f"review rules {path}")
