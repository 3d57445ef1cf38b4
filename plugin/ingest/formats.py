"""Readers for the fact-check feed formats FactSieve accepts.

Every reader turns its input into a stream of ``RawRecord``: a reference back to the source
(``feed.jsonl:12``) and either a dict ready for ``FactCheck.model_validate`` or the reason the
record could not be read. Readers never raise on bad data: one broken line, row or file becomes
one error record and reading goes on, so the ingest report can list every reject with its reason.

Readers only check syntax and structure; what a valid fact-check is (claim present, ISO date,
http URL) stays with ``FactCheck``, so the rule lives in one place.
"""
from __future__ import annotations

import ast
import codecs
import csv
import io
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import Any

from plugin.errors import BadInput
from plugin.models import FactCheck

__all__ = ["Format", "RawRecord", "parse_bytes", "read_records"]


class Format(str, Enum):
    """The input formats; ``auto`` picks one from the file extension and a look at the content."""

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


class _BadRecord(Exception):
    """Internal: a record-level problem, turned into an error ``RawRecord`` by the caller."""


class _Unreadable(Exception):
    """Internal: the whole input cannot be read (missing, not UTF-8, unknown format)."""


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


def _map_fields(obj: dict[str, Any]) -> dict[str, Any]:
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
                raise _BadRecord(f"field 'extra' must be an object, got {_json_kind(value)}")
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


def _json_kind(value: Any) -> str:
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


def _object_record(obj: Any, ref: str, where: str) -> RawRecord:
    if not isinstance(obj, dict):
        return RawRecord(ref, None, f"{where}: expected a JSON object, got {_json_kind(obj)}")
    try:
        return RawRecord(ref, _map_fields(obj))
    except _BadRecord as err:
        return RawRecord(ref, None, f"{where}: {err}")


def _loads(text: str) -> Any:
    """``json.loads`` with every failure (including absurd nesting) as ``ValueError``."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


# ----------------------------------------------------------------------------- JSON Lines, JSON

def _parse_jsonl(stream: Iterable[str], name: str) -> Iterator[RawRecord]:
    for n, line in enumerate(stream, 1):
        if not line.strip():
            continue
        ref = f"{name}:{n}"
        try:
            obj = _loads(line)
        except ValueError as err:
            yield RawRecord(ref, None, f"line {n}: invalid JSON: {err}")
            continue
        yield _object_record(obj, ref, f"line {n}")


def _parse_json_doc(doc: Any, name: str) -> Iterator[RawRecord]:
    items = doc if isinstance(doc, list) else [doc]
    for i, obj in enumerate(items, 1):
        yield _object_record(obj, f"{name}:{i}", f"item {i}")


# ----------------------------------------------------------------------------- CSV

_Row = tuple[int, "dict[str, Any] | None", "str | None"]


def _csv_rows(stream: Iterable[str], required: frozenset[str] = frozenset()) -> Iterator[_Row]:
    """``(line, row, error)`` per data row; ``line`` is where the row starts (header = line 1).

    Empty cells become ``None``; a row with the wrong number of cells is an error rather than a
    guess at which column went missing.
    """
    reader = csv.reader(stream)
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as err:
        raise _Unreadable(f"invalid CSV header: {err}") from None
    header = [h.strip() or f"column_{i}" for i, h in enumerate(header, 1)]
    repeated = sorted({h for h in header if header.count(h) > 1})
    if repeated:  # a dict per row would silently keep only the last of them
        raise _Unreadable(f"CSV header repeats column(s): {', '.join(repeated)}")
    missing = required - {h.lower() for h in header}
    if missing:
        raise _Unreadable(f"CSV header lacks column(s): {', '.join(sorted(missing))}")
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            yield start, None, f"line {start}: invalid CSV: {err}"
            if reader.line_num < start:  # no progress: give up instead of looping
                return
            continue
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            yield start, None, f"line {start}: expected {len(header)} cells, got {len(row)}"
            continue
        yield start, {h: (c if c.strip() else None) for h, c in zip(header, row)}, None


def _parse_csv(stream: Iterable[str], name: str) -> Iterator[RawRecord]:
    for line, row, error in _csv_rows(stream):
        ref = f"{name}:{line}"
        if row is None:
            yield RawRecord(ref, None, error)
        else:
            yield _object_record(row, ref, f"line {line}")


# ----------------------------------------------------------------------------- MultiClaim

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

_MULTICLAIM_COLUMNS = frozenset({"fact_check_id", "claim", "instances"})


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
    raise _BadRecord(f"{column}: not a Python literal: {cell[:80]!r}")


def _text_cell(value: Any, column: str) -> tuple[str | None, str | None, list[tuple[str, float]]]:
    """``(original, english, [(lang, confidence), ...])`` from a MultiClaim text cell."""
    if value is None:
        return None, None, []
    if isinstance(value, str):
        return value, None, []
    if not isinstance(value, (tuple, list)) or not value:
        raise _BadRecord(f"{column}: expected (original, english, languages), "
                         f"got {type(value).__name__}")
    original = value[0] if isinstance(value[0], str) else None
    english = value[1] if len(value) > 1 and isinstance(value[1], str) else None
    langs: list[tuple[str, float]] = []
    for item in value[2] if len(value) > 2 and isinstance(value[2], (list, tuple)) else ():
        if (isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str)
                and isinstance(item[1], (int, float))):
            langs.append((item[0], float(item[1])))
        else:
            raise _BadRecord(f"{column}: bad language entry {item!r}")
    return original, english, langs


def _iso639_1(code: str) -> str:
    code = code.strip().lower()
    return ISO639_3_TO_1.get(code, code)


def _multiclaim_data(row: dict[str, Any]) -> dict[str, Any]:
    claim, claim_en, langs = _text_cell(_literal(row.get("claim"), "claim"), "claim")
    if not claim or not claim.strip():
        raise _BadRecord("claim: no original-language text")
    title, title_en, title_langs = _text_cell(_literal(row.get("title"), "title"), "title")
    instances = _literal(row.get("instances"), "instances") or []
    if not isinstance(instances, (list, tuple)):
        raise _BadRecord(f"instances: expected a list, got {type(instances).__name__}")
    dated: list[tuple[float, str | None]] = []
    for inst in instances:
        if not (isinstance(inst, (list, tuple)) and len(inst) == 2
                and isinstance(inst[0], (int, float)) and not isinstance(inst[0], bool)):
            raise _BadRecord(f"instances: expected (unix_timestamp, url), got {inst!r}")
        dated.append((float(inst[0]), inst[1] if isinstance(inst[1], str) else None))
    dated.sort(key=lambda t: t[0])
    published_at = None
    if dated:
        try:
            published_at = datetime.fromtimestamp(dated[0][0], tz=timezone.utc).date().isoformat()
        except (ValueError, OverflowError, OSError):
            raise _BadRecord(f"instances: bad timestamp {dated[0][0]!r}") from None
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
        if key.lower() not in _MULTICLAIM_COLUMNS | {"title"}:
            data["extra"][key] = value
    return {k: v for k, v in data.items() if v is not None}


def _parse_multiclaim(stream: Iterable[str], name: str) -> Iterator[RawRecord]:
    for line, row, error in _csv_rows(stream, _MULTICLAIM_COLUMNS):
        ref = f"{name}:{line}"
        if row is None:
            yield RawRecord(ref, None, error)
            continue
        row = {k.lower() if k.lower() in _MULTICLAIM_COLUMNS | {"title"} else k: v
               for k, v in row.items()}
        try:
            yield RawRecord(ref, _multiclaim_data(row))
        except _BadRecord as err:
            yield RawRecord(ref, None, f"line {line}: {err}")


# ----------------------------------------------------------------------------- ClaimReview

#: Language names fact-checkers put in ``inLanguage`` instead of a code (lower-cased).
_LANGUAGE_NAMES = {
    "english": "en", "spanish": "es", "español": "es", "espanol": "es", "french": "fr",
    "français": "fr", "francais": "fr", "german": "de", "deutsch": "de", "portuguese": "pt",
    "português": "pt", "portugues": "pt", "arabic": "ar", "turkish": "tr", "türkçe": "tr",
    "polish": "pl", "polski": "pl", "thai": "th", "malay": "ms", "bahasa melayu": "ms",
    "korean": "ko", "한국어": "ko", "hindi": "hi", "indonesian": "id", "bahasa indonesia": "id",
    "italian": "it", "italiano": "it", "dutch": "nl", "nederlands": "nl", "russian": "ru",
    "ukrainian": "uk", "chinese": "zh", "japanese": "ja", "bengali": "bn", "tamil": "ta",
    "telugu": "te", "marathi": "mr", "gujarati": "gu", "kannada": "kn", "malayalam": "ml",
    "punjabi": "pa", "urdu": "ur", "persian": "fa", "farsi": "fa", "tagalog": "tl",
    "filipino": "tl", "vietnamese": "vi", "greek": "el", "czech": "cs", "romanian": "ro",
    "hungarian": "hu", "swedish": "sv", "norwegian": "no", "danish": "da", "finnish": "fi",
    "hebrew": "he", "serbian": "sr", "croatian": "hr", "slovak": "sk", "bulgarian": "bg",
    "catalan": "ca", "swahili": "sw", "burmese": "my", "nepali": "ne", "sinhala": "si",
}
_LANG_CODE = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]+)*")
_NUMBER = re.compile(r"\s*-?\d+(?:[.,]\d+)?\s*")


def _local_types(node: dict[str, Any]) -> set[str]:
    """``@type`` as a set of local names: "ClaimReview", "schema:ClaimReview", full IRIs, lists."""
    raw = node.get("@type")
    types = raw if isinstance(raw, list) else [raw]
    return {re.split(r"[/:#]", t)[-1] for t in types if isinstance(t, str)}


def _is_claimreview(node: Any) -> bool:
    return isinstance(node, dict) and "ClaimReview" in _local_types(node)


def _is_google(node: Any) -> bool:
    return isinstance(node, dict) and "@type" not in node and isinstance(node.get("claims"), list)


def _nodes(doc: Any, depth: int = 0) -> Iterator[Any]:
    """Top-level nodes in document order: list items and ``@graph`` members, flattened.

    Only a few levels deep (a list of pages with graphs is the deepest real shape), so a
    pathologically nested document cannot exhaust the stack.
    """
    if depth > 4:
        yield doc
    elif isinstance(doc, list):
        for item in doc:
            yield from _nodes(item, depth + 1)
    elif isinstance(doc, dict) and isinstance(doc.get("@graph"), list):
        if _local_types(doc):
            yield doc  # a typed node that also carries a graph: both count
        yield from _nodes(doc["@graph"], depth + 1)
    else:
        yield doc


def _text(value: Any) -> str | None:
    """A plain string from a JSON-LD value: string, number, ``{"@value": ...}`` or list of them."""
    if isinstance(value, list):
        for item in value:
            text = _text(item)
            if text:
                return text
        return None
    if isinstance(value, dict):
        return _text(value.get("@value"))
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return str(value)
    return value if isinstance(value, str) and value.strip() else None


def _deref(value: Any, index: dict[str, dict[str, Any]]) -> Any:
    """Follow an ``{"@id": ...}`` reference to the node it names in the same document."""
    if (isinstance(value, dict) and isinstance(value.get("@id"), str)
            and not set(value) - {"@id", "@type"}):
        return index.get(value["@id"], value)
    return value


def _first(value: Any, index: dict[str, dict[str, Any]]) -> Any:
    if isinstance(value, list):
        value = value[0] if value else None
    return _deref(value, index)


def _name(value: Any, index: dict[str, dict[str, Any]]) -> str | None:
    """An author/publisher name: a string, a node with ``name``, or the first of a list."""
    if isinstance(value, list):
        for item in value:
            name = _name(item, index)
            if name:
                return name
        return None
    value = _deref(value, index)
    if isinstance(value, dict):
        return _text(value.get("name")) or _text(value.get("alternateName"))
    return _text(value)


def _language(value: Any) -> tuple[str | None, str | None]:
    """``(code, unmapped)`` from ``inLanguage``: a code, a language name, or a Language node."""
    if isinstance(value, list):
        value = value[0] if value else None
    candidates = ([value.get("alternateName"), value.get("name")] if isinstance(value, dict)
                  else [value])
    texts = [t for t in (_text(c) for c in candidates) if t]
    for text in texts:
        if _LANG_CODE.fullmatch(text.strip()):
            return text.strip(), None
        code = _LANGUAGE_NAMES.get(text.strip().lower())
        if code:
            return code, None
    return None, (texts[0] if texts else None)


def _claimreview_data(node: dict[str, Any], index: dict[str, dict[str, Any]]) -> dict[str, Any]:
    claim = _text(node.get("claimReviewed"))
    if claim is None:
        raise _BadRecord("ClaimReview without claimReviewed")
    extra: dict[str, Any] = {}
    rating = None
    review = _first(node.get("reviewRating"), index)
    if isinstance(review, dict):
        value = _text(review.get("ratingValue"))
        rating = _text(review.get("alternateName")) or _text(review.get("name"))
        if rating is None and value is not None and not _NUMBER.fullmatch(value):
            rating = value
        for key, out in (("ratingValue", "rating_value"), ("bestRating", "best_rating"),
                         ("worstRating", "worst_rating")):
            if review.get(key) is not None:
                extra[out] = review[key]
    else:
        rating = _text(review)
    item = _first(node.get("itemReviewed"), index)
    claimant = None
    if isinstance(item, dict):
        claimant = _name(item.get("author"), index)
        if _text(item.get("datePublished")):
            extra["claim_date"] = _text(item.get("datePublished"))
        appearances = []
        for key in ("firstAppearance", "appearance"):
            for app in item.get(key) if isinstance(item.get(key), list) else [item.get(key)]:
                app = _deref(app, index)
                url = ((_text(app.get("url")) or _text(app.get("@id"))) if isinstance(app, dict)
                       else _text(app))
                if url and url not in appearances:
                    appearances.append(url)
        if appearances:
            extra["appearances"] = appearances
    lang, unmapped = _language(node.get("inLanguage"))
    if unmapped:
        extra["inLanguage"] = unmapped
    if _text(node.get("@id")):
        extra["jsonld_id"] = _text(node.get("@id"))
    data = {
        "claim": claim,
        "title": _text(node.get("headline")) or _text(node.get("name")),
        "url": _text(node.get("url")),
        "publisher": _name(node.get("author"), index) or _name(node.get("publisher"), index),
        "rating": rating,
        "lang": lang,
        "published_at": _text(node.get("datePublished")),
        "claimant": claimant,
        "extra": extra or None,
    }
    return {k: v for k, v in data.items() if v is not None}


def _google_data(claim: dict[str, Any], review: Any) -> dict[str, Any]:
    """One review of one claim from the Fact Check Tools ``claims:search`` response."""
    text = _text(claim.get("text"))
    if text is None:
        raise _BadRecord("claim without text")
    if not isinstance(review, dict):
        raise _BadRecord(f"claimReview entry is {_json_kind(review)}, not an object")
    publisher = review.get("publisher") if isinstance(review.get("publisher"), dict) else {}
    extra = {"claim_date": _text(claim.get("claimDate")),
             "publisher_site": _text(publisher.get("site"))}
    data = {
        "claim": text,
        "claimant": _text(claim.get("claimant")),
        "title": _text(review.get("title")),
        "url": _text(review.get("url")),
        "publisher": _text(publisher.get("name")) or _text(publisher.get("site")),
        "rating": _text(review.get("textualRating")),
        "lang": _text(review.get("languageCode")),
        "published_at": _text(review.get("reviewDate")),
        "extra": {k: v for k, v in extra.items() if v is not None} or None,
    }
    return {k: v for k, v in data.items() if v is not None}


def _parse_claimreview_doc(doc: Any, name: str) -> Iterator[RawRecord]:
    """ClaimReview nodes (single, list, ``@graph``) and Google Fact Check Tools responses.

    Other schema.org nodes (WebPage, Organization …) are context, not records, and are skipped;
    a document with no ClaimReview at all is reported, so an empty import is never silent.
    """
    nodes = list(_nodes(doc))
    index = {n["@id"]: n for n in nodes if isinstance(n, dict) and isinstance(n.get("@id"), str)}
    found = False
    claim_no = 0
    for i, node in enumerate(nodes, 1):
        if _is_google(node):
            found = True
            for claim in node["claims"]:
                claim_no += 1
                ref = f"{name}:{claim_no}"
                if not isinstance(claim, dict):
                    yield RawRecord(ref, None, f"claim {claim_no}: expected an object, "
                                               f"got {_json_kind(claim)}")
                    continue
                reviews = claim.get("claimReview")
                if not isinstance(reviews, list) or not reviews:
                    yield RawRecord(ref, None, f"claim {claim_no}: no claimReview")
                    continue
                for j, review in enumerate(reviews, 1):
                    ref = f"{name}:{claim_no}.{j}"
                    try:
                        yield RawRecord(ref, _google_data(claim, review))
                    except _BadRecord as err:
                        yield RawRecord(ref, None, f"claim {claim_no}, review {j}: {err}")
                    except RecursionError:
                        yield RawRecord(ref, None,
                                        f"claim {claim_no}, review {j}: nested too deeply")
        elif _is_claimreview(node):
            found = True
            try:
                yield RawRecord(f"{name}:{i}", _claimreview_data(node, index))
            except _BadRecord as err:
                yield RawRecord(f"{name}:{i}", None, f"item {i}: {err}")
            except RecursionError:
                yield RawRecord(f"{name}:{i}", None, f"item {i}: nested too deeply")
    if not found:
        raise _Unreadable("no ClaimReview node and no Fact Check Tools 'claims' list found")


def _looks_like_claimreview(doc: Any) -> bool:
    return any(_is_claimreview(n) or _is_google(n) for n in _nodes(doc))


# ----------------------------------------------------------------------------- dispatch

#: Formats read line by line from a text stream, with the ``newline`` their stream needs
#: (CSV handles quoted line breaks itself; JSON Lines splits on "\n" only, as the spec says).
_STREAM_PARSERS: dict[Format, tuple[Callable[[Iterable[str], str], Iterator[RawRecord]], str]] = {
    Format.jsonl: (_parse_jsonl, "\n"),
    Format.csv: (_parse_csv, ""),
    Format.multiclaim: (_parse_multiclaim, ""),
}
#: Formats read as one JSON document.
_DOC_PARSERS: dict[Format, Callable[[Any, str], Iterator[RawRecord]]] = {
    Format.json: _parse_json_doc,
    Format.claimreview: _parse_claimreview_doc,
}
#: Extensions that name a format; .json/.jsonld map to ``auto`` because the content decides
#: between a plain JSON array and ClaimReview.
_EXTENSIONS = {".jsonl": Format.jsonl, ".ndjson": Format.jsonl, ".csv": Format.csv,
               ".json": Format.auto, ".jsonld": Format.auto}


def _valid_formats() -> str:
    return ", ".join(f.value for f in Format if f is not Format.auto)


def _csv_flavour(first_line: str) -> Format:
    """``multiclaim`` when the CSV header is MultiClaim's, plain ``csv`` otherwise."""
    try:
        header = {h.strip().lower() for h in next(csv.reader([first_line]), [])}
    except csv.Error:
        return Format.csv
    return Format.multiclaim if {"fact_check_id", "instances"} <= header else Format.csv


def _sniff_json(text: str, name: str) -> tuple[Format, Any]:
    """Decide json / claimreview / jsonl from content; returns the parsed document if any."""
    if not text.lstrip().startswith(("{", "[")):
        raise _Unreadable(f"cannot tell the format of {name!r} (not JSON); "
                          f"give one of: {_valid_formats()}")
    try:
        doc = _loads(text)
    except ValueError as err:
        if isinstance(err, json.JSONDecodeError) and err.msg == "Extra data":
            first = next((ln for ln in text.split("\n") if ln.strip()), "")
            try:
                if isinstance(_loads(first), dict):
                    return Format.jsonl, None  # JSON Lines under a .json name or in a body
            except ValueError:
                pass
        raise _Unreadable(f"invalid JSON: {err}") from None
    return (Format.claimreview if _looks_like_claimreview(doc) else Format.json), doc


def _parse_text(text: str, fmt: Format, name: str) -> Iterator[RawRecord]:
    """Parse decoded text; ``auto`` here means "JSON of some kind", sniffed from the content."""
    doc: Any = None
    if fmt is Format.auto:
        fmt, doc = _sniff_json(text, name)
    if fmt in _STREAM_PARSERS:
        parser, newline = _STREAM_PARSERS[fmt]
        return parser(io.StringIO(text, newline=newline), name)
    if doc is None:
        try:
            doc = _loads(text)
        except ValueError as err:
            raise _Unreadable(f"invalid JSON: {err}") from None
    return _DOC_PARSERS[fmt](doc, name)


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise _Unreadable(f"not UTF-8 text (byte {err.start})") from None


def parse_bytes(data: bytes, fmt: Format | str, name: str = "body") -> Iterator[RawRecord]:
    """Records from an in-memory body (an HTTP upload): JSON array, JSON Lines, ClaimReview, CSV.

    With ``auto``, ``name``'s extension decides when it has a known one, else the content (one
    JSON document → json or claimreview; one object per line → jsonl). Raises ``BadInput`` only
    for an unknown format name; everything wrong with the data comes back as error records.
    """
    fmt = Format.parse(fmt)

    def gen() -> Iterator[RawRecord]:
        try:
            text = _decode(data)
            chosen = fmt
            if chosen is Format.auto:
                chosen = _EXTENSIONS.get(Path(name).suffix.lower(), Format.auto)
                if chosen is Format.csv:
                    chosen = _csv_flavour(text.split("\n", 1)[0])
            yield from _parse_text(text, chosen, name)
        except _Unreadable as err:
            yield RawRecord(name, None, str(err))

    return gen()


# ----------------------------------------------------------------------------- files

def _check_utf8(path: Path) -> None:
    """Read the file once as bytes so a non-UTF-8 file is refused before any record is yielded."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as err:
                raise _Unreadable(f"not UTF-8 text (byte {offset + err.start})") from None
            offset += len(chunk)
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError as err:
            raise _Unreadable(f"not UTF-8 text (byte {offset + err.start})") from None


def _target_file(path: Path, fmt: Format) -> tuple[Path, Format]:
    """The file to read; a MultiClaim directory means its ``fact_checks.csv``."""
    if path.is_dir():
        inner = path / "fact_checks.csv"
        if fmt in (Format.auto, Format.multiclaim):
            if inner.is_file():
                return inner, Format.multiclaim
            raise _Unreadable("is a directory without fact_checks.csv")
        raise _Unreadable("is a directory")
    if not path.exists():
        raise _Unreadable("no such file")
    if not path.is_file():
        raise _Unreadable("not a regular file")
    return path, fmt


def _read_path(path: Path, fmt: Format) -> Iterator[RawRecord]:
    target, fmt = _target_file(path, fmt)
    _check_utf8(target)
    if fmt is Format.auto:
        suffix = target.suffix.lower()
        if suffix not in _EXTENSIONS:
            raise _Unreadable(f"cannot tell the format from the extension {suffix or '(none)'!r}; "
                              f"give one of: {_valid_formats()}")
        fmt = _EXTENSIONS[suffix]
        if fmt is Format.csv:
            with target.open(encoding="utf-8-sig", newline="") as fh:
                fmt = _csv_flavour(fh.readline())
    name = target.name
    if fmt in _STREAM_PARSERS:
        parser, newline = _STREAM_PARSERS[fmt]
        with target.open(encoding="utf-8-sig", newline=newline) as fh:
            yield from parser(fh, name)
    else:
        yield from _parse_text(target.read_text(encoding="utf-8-sig"), fmt, name)


def read_records(paths: Iterable[Path | str] | Path | str,
                 fmt: Format | str = Format.auto) -> Iterator[RawRecord]:
    """Records from files (or MultiClaim directories), one file after the other.

    A file that cannot be read at all (missing, not UTF-8, unknown format, broken JSON document)
    becomes one error record whose ``ref`` is the path; the other files are still read. Raises
    ``BadInput`` only for an unknown format name.
    """
    fmt = Format.parse(fmt)
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)

    def gen() -> Iterator[RawRecord]:
        for item in items:
            path = Path(item)
            try:
                yield from _read_path(path, fmt)
            except _Unreadable as err:
                yield RawRecord(str(item), None, str(err))
            except OSError as err:
                yield RawRecord(str(item), None, f"cannot read: {err.strerror or err}")
            except UnicodeDecodeError as err:  # file changed under us after the check
                yield RawRecord(str(item), None, f"not UTF-8 text ({err.reason})")

    return gen()
