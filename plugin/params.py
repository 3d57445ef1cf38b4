"""Integers from text a user typed: query parameters and command-line values.

One rule, decided here: ASCII digits (an optional leading minus), within a stated range, else
``BadInput`` naming the parameter (HTTP 400, CLI exit 2). ``str.isdigit`` is true of "²" and
"①", which ``int()`` then refuses (an uncaught ``ValueError``, a 500), and ``int()`` itself
takes " 7", "7_0" and Arabic-Indic digits, none of which a URL or flag means as a number.
"""
from __future__ import annotations

from plugin.errors import BadInput

__all__ = ["MAX_DIGITS", "parse_float", "parse_int"]

#: Longer strings are refused before ``int()`` sees them (it refuses 4,300+ digits itself).
MAX_DIGITS = 18


def _is_integer(raw: str) -> bool:
    digits = raw[1:] if raw.startswith("-") else raw
    return 0 < len(digits) <= MAX_DIGITS and digits.isascii() and digits.isdigit()


def parse_int(name: str, raw: str, *, lo: int, hi: int) -> int:
    """``raw`` as an integer from ``lo`` to ``hi`` inclusive; ``BadInput`` naming ``name``
    (with an ``errors`` entry for it) when it is anything else."""
    if _is_integer(raw):
        value = int(raw)
        if lo <= value <= hi:
            return value
    message = f"{name} must be an integer from {lo} to {hi}, got {raw[:40]!r}"
    raise BadInput(message, errors=[{"field": name, "message": message, "type": "int_parsing"}])


def parse_float(name: str, raw: str, *, lo: float, hi: float) -> float:
    """``raw`` as a decimal number (ASCII digits, one optional point) from ``lo`` to ``hi``;
    ``BadInput`` naming ``name`` otherwise (``float()`` would take "nan", "inf" and "1e400")."""
    whole, _, frac = raw.partition(".")
    if (_is_integer(whole) or (whole in ("", "-") and frac)) and \
            (not frac or (frac.isascii() and frac.isdigit() and len(frac) <= MAX_DIGITS)):
        value = float(raw)
        if lo <= value <= hi:
            return value
    message = f"{name} must be a number from {lo:g} to {hi:g}, got {raw[:40]!r}"
    raise BadInput(message, errors=[{"field": name, "message": message, "type": "float_parsing"}])
