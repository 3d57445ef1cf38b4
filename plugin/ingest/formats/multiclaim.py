"""MultiClaim (Pikuliak et al., 2023) ``fact_checks.csv``: CSV whose cells are Python literals.

``claim`` and ``title`` are ``(original, english, [(lang, confidence), ...])`` tuples and
``instances`` a list of ``(unix_timestamp, url)``; cells are parsed with ``ast.literal_eval``,
never ``eval``. The English translation, language scores and every URL are kept in ``extra``.
"""
from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from typing import Any

from plugin.ingest.formats import table
from plugin.ingest.formats.base import BadRecord, RawRecord

NEWLINE = table.NEWLINE

#: ISO 639-3 (and 639-2/B) → ISO 639-1, for the codes MultiClaim and common feeds use. Codes
#: without a two-letter equivalent are kept as they are.
ISO639_3_TO_1 = {
    "afr": "af", "amh": "am", "ara": "ar", "arb": "ar", "asm": "as", "aze": "az", "bel": "be",
    "ben": "bn", "bos": "bs", "bul": "bg", "cat": "ca", "ces": "cs", "cze": "cs", "cmn": "zh",
    "chi": "zh", "zho": "zh", "cym": "cy", "wel": "cy", "dan": "da", "deu": "de", "ger": "de",
    "ell": "el", "gre": "el", "eng": "en", "est": "et", "eus": "eu", "baq": "eu", "fas": "fa",
    "per": "fa", "pes": "fa", "fin": "fi", "fra": "fr", "fre": "fr", "gle": "ga", "glg": "gl",
    "guj": "gu", "hau": "ha", "heb": "he", "hin": "hi", "hrv": "hr", "hun": "hu", "hye": "hy",
    "arm": "hy", "ibo": "ig", "ind": "id", "isl": "is", "ice": "is", "ita": "it", "jpn": "ja",
    "kat": "ka", "geo": "ka", "kaz": "kk", "khm": "km", "kan": "kn", "kor": "ko", "kur": "ku",
    "kir": "ky", "lao": "lo", "lit": "lt", "lav": "lv", "mkd": "mk", "mac": "mk", "mal": "ml",
    "mon": "mn", "mar": "mr", "msa": "ms", "may": "ms", "zsm": "ms", "mlt": "mt", "mya": "my",
    "bur": "my", "nep": "ne", "nld": "nl", "dut": "nl", "nor": "no", "nob": "nb", "nno": "nn",
    "ori": "or", "orm": "om", "pan": "pa", "pol": "pl", "pus": "ps", "por": "pt", "ron": "ro",
    "rum": "ro", "rus": "ru", "sin": "si", "slk": "sk", "slo": "sk", "slv": "sl", "som": "so",
    "spa": "es", "sqi": "sq", "alb": "sq", "srp": "sr", "swa": "sw", "swh": "sw", "swe": "sv",
    "tam": "ta", "tel": "te", "tgk": "tg", "tha": "th", "tir": "ti", "tgl": "tl",
    # Filipino is standardised Tagalog; langdetect reports it as "tl".
    "fil": "tl",
    "tur": "tr", "ukr": "uk", "urd": "ur", "uzb": "uz", "vie": "vi", "xho": "xh", "yor": "yo",
    "zul": "zu", "bre": "br", "epo": "eo", "fry": "fy", "gla": "gd", "hat": "ht", "jav": "jv",
    "kin": "rw", "lat": "la", "ltz": "lb", "mlg": "mg", "mri": "mi", "nya": "ny", "que": "qu",
    "sna": "sn", "snd": "sd", "sot": "st", "sun": "su", "tat": "tt", "tuk": "tk", "uig": "ug",
    "yid": "yi", "bod": "bo", "tib": "bo", "aka": "ak", "lin": "ln", "wol": "wo", "fao": "fo",
}

#: The columns a MultiClaim file must have (compared lower-cased); ``title`` is optional.
COLUMNS = frozenset({"fact_check_id", "claim", "instances"})
_KNOWN = COLUMNS | {"title"}


def looks_like(first_line: str) -> bool:
    """Whether a CSV header line is MultiClaim's (it names ``fact_check_id`` and ``instances``)."""
    return {"fact_check_id", "instances"} <= table.header_columns(first_line)


def _literal(cell: str | None, column: str) -> Any:
    """Parse a MultiClaim cell, a Python literal, with ``ast.literal_eval`` (never ``eval``).

    Raw newlines inside the quoted strings are escaped first, as the organisers' ``load.py``
    does: ``literal_eval`` rejects a line break inside a one-line string literal.
    """
    if cell is None:
        return None
    escaped = cell.replace("\r", "\\r").replace("\n", "\\n")
    for candidate in dict.fromkeys((escaped, cell)):
        try:
            return ast.literal_eval(candidate)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
    raise BadRecord(f"{column}: not a Python literal: {cell[:80]!r}")


def _text_cell(value: Any, column: str) -> tuple[str | None, str | None, list[tuple[str, float]]]:
    """``(original, english, [(lang, confidence), ...])`` from a MultiClaim text cell."""
    if value is None:
        return None, None, []
    if isinstance(value, str):
        return value, None, []
    if not isinstance(value, (tuple, list)) or not value:
        raise BadRecord(f"{column}: expected (original, english, languages), "
                         f"got {type(value).__name__}")
    original = value[0] if isinstance(value[0], str) else None
    english = value[1] if len(value) > 1 and isinstance(value[1], str) else None
    langs: list[tuple[str, float]] = []
    for item in value[2] if len(value) > 2 and isinstance(value[2], (list, tuple)) else ():
        if (isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str)
                and isinstance(item[1], (int, float))):
            langs.append((item[0], float(item[1])))
        else:
            raise BadRecord(f"{column}: bad language entry {item!r}")
    return original, english, langs


def _iso639_1(code: str) -> str:
    code = code.strip().lower()
    return ISO639_3_TO_1.get(code, code)


def _multiclaim_data(row: dict[str, Any]) -> dict[str, Any]:
    claim, claim_en, langs = _text_cell(_literal(row.get("claim"), "claim"), "claim")
    if not claim or not claim.strip():
        raise BadRecord("claim: no original-language text")
    title, title_en, title_langs = _text_cell(_literal(row.get("title"), "title"), "title")
    instances = _literal(row.get("instances"), "instances") or []
    if not isinstance(instances, (list, tuple)):
        raise BadRecord(f"instances: expected a list, got {type(instances).__name__}")
    dated: list[tuple[float, str | None]] = []
    for inst in instances:
        if not (isinstance(inst, (list, tuple)) and len(inst) == 2
                and isinstance(inst[0], (int, float)) and not isinstance(inst[0], bool)):
            raise BadRecord(f"instances: expected (unix_timestamp, url), got {inst!r}")
        dated.append((float(inst[0]), inst[1] if isinstance(inst[1], str) else None))
    dated.sort(key=lambda t: t[0])
    published_at = None
    if dated:
        try:
            published_at = datetime.fromtimestamp(dated[0][0], tz=timezone.utc).date().isoformat()
        except (ValueError, OverflowError, OSError):
            raise BadRecord(f"instances: bad timestamp {dated[0][0]!r}") from None
    urls = [u for _, u in dated if u]
    web = [u for u in urls if u.lower().startswith(("http://", "https://"))]
    scores = langs or title_langs
    lang = _iso639_1(max(scores, key=lambda t: t[1])[0]) if scores else None

    extra: dict[str, Any] = {"claim_en": claim_en, "title_en": title_en,
                             "lang_scores": [list(t) for t in scores], "urls": urls}
    data: dict[str, Any] = {
        "id": row.get("fact_check_id"), "claim": claim, "title": title or None,
        "url": web[0] if web else None, "lang": lang, "published_at": published_at,
        "extra": {k: v for k, v in extra.items() if v not in (None, [])},
    }
    for key, value in row.items():  # columns beyond the MultiClaim four are kept, not lost
        if key.lower() not in _KNOWN:
            data["extra"][key] = value
    return {k: v for k, v in data.items() if v is not None}


def _row_data(row: dict[str, Any]) -> dict[str, Any]:
    return _multiclaim_data({k.lower() if k.lower() in _KNOWN else k: v for k, v in row.items()})


def parse(stream: Iterable[str], name: str) -> Iterator[RawRecord]:
    return table.records(stream, name, _row_data, COLUMNS)
