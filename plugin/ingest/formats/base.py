"""What every format reader shares: the ``Format`` names, the ``RawRecord`` a reader yields, the
two internal failures (one record, the whole input) and the mapping of keys onto FactCheck fields.

Readers only check syntax and structure; what a valid fact-check is (claim present, ISO date,
http URL) stays with ``FactCheck``, so the rule lives in one place.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from plugin.errors import BadInput
from plugin.models import FactCheck


class Format(str, Enum):
    """The input formats; ``auto`` lets ``dispatch.choose_format`` pick one from the name's
    extension or, failing that, the content."""

    auto = "auto"
    jsonl = "jsonl"
    json = "json"
    csv = "csv"
    claimreview = "claimreview"
    multiclaim = "multiclaim"

    @classmethod
    def parse(cls, value: str | Format) -> Format:
        if isinstance(value, Format):
            return value
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            valid = ", ".join(f.value for f in cls)
            raise BadInput(f"unknown input format {value!r}; valid formats: {valid}") from None


@dataclass(frozen=True)
class RawRecord:
    """One record as read: ``data`` for ``FactCheck.model_validate``, or ``error`` saying why not.

    ``ref`` points back to the source: ``<file name>:<n>`` with the 1-based line (JSON Lines,
    CSV, MultiClaim), item (JSON, ClaimReview) or ``<claim>.<review>`` (Google Fact Check
    Tools); the path as given, alone, when the whole file could not be read.
    """

    ref: str
    data: dict[str, Any] | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class BadRecord(Exception):
    """Internal: a record-level problem, turned into an error ``RawRecord`` by ``guarded``."""


class Unreadable(Exception):
    """Internal: the whole input cannot be read (missing, not UTF-8, unknown format); the
    public readers turn it into one error ``RawRecord`` for the whole input."""


def guarded(ref: str, where: str, build: Callable[..., dict[str, Any]], *args: Any) -> RawRecord:
    """The record ``build(*args)`` makes, or an error record starting with ``where`` ("line 3")
    when it raises ``BadRecord`` or recurses through an absurdly nested value."""
    try:
        return RawRecord(ref, build(*args))
    except BadRecord as err:
        return RawRecord(ref, None, f"{where}: {err}")
    except RecursionError:
        return RawRecord(ref, None, f"{where}: nested too deeply")


def loads(text: str) -> Any:
    """``json.loads`` with every failure (including absurd nesting) as ``ValueError``."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def json_kind(value: Any) -> str:
    """"an object", "a string" …: how error messages name a JSON value's type."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "null" if value is None else type(value).__name__


# ----------------------------------------------------------------------------- field mapping

_FIELDS = frozenset(FactCheck.model_fields) - {"extra"}

#: Column / key names other tools use for FactCheck fields (compared lower-cased).
_SYNONYMS = {
    "claim_text": "claim",
    "claimreviewed": "claim",
    "date": "published_at",
    "published": "published_at",
    "datepublished": "published_at",
    "language": "lang",
    "inlanguage": "lang",
}


def _target(key: str) -> str | None:
    k = key.strip().lower()
    return k if k in _FIELDS else _SYNONYMS.get(k)


def map_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """FactCheck fields by name (or synonym); everything else under ``extra``.

    When two keys map to one field (``claim`` and ``claim_text``), the first non-empty one wins
    and the other is kept in ``extra`` under its own name. Empty values are not kept in ``extra``.
    """
    out: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in obj.items():
        if key == "extra":
            if value is None:
                continue
            if not isinstance(value, dict):
                raise BadRecord(f"field 'extra' must be an object, got {json_kind(value)}")
            extra.update(value)
            continue
        target = _target(str(key))
        if target is None or out.get(target) is not None:
            if value is not None:  # an empty cell in an unknown column says nothing
                extra[str(key)] = value
        else:
            out[target] = value
    if extra:
        out["extra"] = extra
    return out


def object_record(obj: Any, ref: str, where: str) -> RawRecord:
    """A flat fact-check object (JSON Lines line, JSON item, CSV row) as a record."""
    if not isinstance(obj, dict):
        return RawRecord(ref, None, f"{where}: expected a JSON object, got {json_kind(obj)}")
    return guarded(ref, where, map_fields, obj)
