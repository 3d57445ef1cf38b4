"""Evidence documents in: streaming readers and what a valid document is.

Two layouts, told apart per line, in one JSON Lines stream:

- documents ``{url, title?, text, published_at|date?, lang?, domain?, claim_id?, source?, …}``;
- the AVeriTeC knowledge store ``{url, url2text: [sentence, …], …}`` (one file per claim, one
  scraped page per line; its other keys, such as ``type`` and ``query``, are kept in ``extra``).

Files are read line by line as bytes (never whole: a knowledge-store file runs to tens of
megabytes), so one line that is not UTF-8, not JSON or too long is rejected alone, with its line
number, and reading goes on. Readers yield ``RawRecord``s, as the fact-check readers do; whether a
record is a valid document is ``to_document``'s one rule.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from datetime import date
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from plugin.evidence.urls import domain_of, url_key
from plugin.ingest.formats.base import RawRecord, json_kind, loads
from plugin.ingest.pipeline import validation_reason
from plugin.models import FactCheck, no_control_chars

#: A longer line is rejected without being held: 16 MiB is far beyond any scraped page.
MAX_LINE_BYTES = 16 * 1024 * 1024
_READ_CHUNK = 1 << 20
MAX_URL_CHARS = 8000

#: What ``source`` says when a record does not: which layout it came in.
SOURCE_JSONL = "jsonl"
SOURCE_AVERITEC = "averitec-ks"

#: Keys other tools use for document fields (compared lower-cased).
_SYNONYMS = {"date": "published_at", "published": "published_at", "datepublished": "published_at",
             "publication_date": "published_at", "language": "lang", "inlanguage": "lang",
             "body": "text", "content": "text", "url2text": "sentences"}


class EvidenceDocument(BaseModel):
    """One knowledge-store document, validated. ``text`` or ``sentences`` holds its content.

    Dates, languages and URLs follow the fact-check rules (``FactCheck``'s validators: ISO dates
    or Unix seconds, "en-GB" as "en", http(s) URLs only), one rule for every record.
    """

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    #: bounded so that its ``url_key`` is always indexed (Lucene's term limit is 32,766 bytes),
    #: and an excluded URL is always excluded
    url: str = Field(max_length=MAX_URL_CHARS)
    title: str | None = None
    text: str | None = None
    sentences: list[str] | None = None
    published_at: date | None = None
    lang: str | None = None
    domain: str | None = None
    claim_id: str | None = Field(default=None, max_length=256)
    source: str = SOURCE_JSONL
    extra: dict[str, Any] = Field(default_factory=dict)

    _check_url = field_validator("url", mode="before")(FactCheck._url.__func__)
    _check_lang = field_validator("lang", mode="before")(FactCheck._lang.__func__)
    _check_date = field_validator("published_at", mode="before")(FactCheck._date.__func__)

    @field_validator("claim_id", mode="before")
    @classmethod
    def _claim_id(cls, v: Any) -> Any:
        v = str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
        return no_control_chars(v.strip()) if isinstance(v, str) else v  # ends are stripped anyway

    @model_validator(mode="after")
    def _derive(self) -> EvidenceDocument:
        if self.domain is None:
            self.domain = domain_of(self.url)
        if not (self.text or "").strip() and not any(s.strip() for s in self.sentences or ()):
            raise ValueError("no text: give text, or url2text sentences")
        return self

    @property
    def content(self) -> str | list[str]:
        return self.sentences if self.sentences is not None else self.text or ""

    @property
    def doc_id(self) -> str:
        """Stable id of the document: its URL key, and its claim when it came from one claim's
        knowledge store (AVeriTeC gives every claim its own store, and one page can be in
        several; each claim keeps its copy)."""
        return hashlib.sha1(self.key().encode("utf-8")).hexdigest()[:20]

    def key(self) -> str:
        base = url_key(self.url)
        return f"{self.claim_id}\x1f{base}" if self.claim_id else base

    def passage_id(self, position: int) -> str:
        """Stable id of the passage at ``position``: re-ingesting updates it in place."""
        return hashlib.sha1(f"{self.key()}\x1f{position}".encode("utf-8")).hexdigest()[:20]


def to_document(raw: RawRecord) -> EvidenceDocument | str:
    """The record as an ``EvidenceDocument``, or the one-line reason it is rejected."""
    if raw.error is not None or raw.data is None:
        return raw.error or "empty record"
    try:
        return EvidenceDocument.model_validate(raw.data)
    except ValidationError as exc:
        return validation_reason(exc)


class _BadLine(Exception):
    pass


_FIELDS = frozenset(EvidenceDocument.model_fields) - {"extra"}


def _fields(obj: Any, claim_id: str | None) -> dict[str, Any]:
    """A line's object as ``EvidenceDocument`` fields: known keys (and synonyms) by name, the
    rest in ``extra``. ``url2text`` marks the AVeriTeC layout; items of a sentence list that are
    not strings (a stray ``null``) are skipped."""
    if not isinstance(obj, dict):
        raise _BadLine(f"expected a JSON object, got {json_kind(obj)}")
    if not str(obj.get("url") or "").strip():
        raise _BadLine("no url")
    averitec = "url2text" in obj
    out: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in obj.items():
        name = str(key).strip().lower()
        name = _SYNONYMS.get(name, name)
        if name == "extra" and isinstance(value, dict):
            extra.update(value)
        elif name in _FIELDS and out.get(name) is None:
            out[name] = value
        elif value is not None:
            extra[str(key)] = value
    sentences = out.get("sentences")
    if sentences is not None:
        if not isinstance(sentences, list):
            raise _BadLine(f"{'url2text' if averitec else 'sentences'} must be a list of "
                           f"sentences, got {json_kind(sentences)}")
        out["sentences"] = [s for s in sentences if isinstance(s, str)]
    if out.get("source") is None:
        out["source"] = SOURCE_AVERITEC if averitec else SOURCE_JSONL
    if claim_id is not None and out.get("claim_id") is None:
        out["claim_id"] = claim_id
    if extra:
        out["extra"] = extra
    return out


def _lines(stream: Iterable[bytes | str] | IO[bytes]) -> Iterator[tuple[int, bytes | str | None]]:
    """``(line number, line)``; the line is ``None`` when it is longer than ``MAX_LINE_BYTES``
    (read past in chunks, never held). A binary file is read with ``readline(limit)``; any
    other iterable (a generator, an HTTP body's lines) is taken line by line as it comes."""
    readline = getattr(stream, "readline", None)
    if readline is None or isinstance(stream, (list, tuple)):
        yield from enumerate(stream, 1)  # type: ignore[arg-type]
        return
    n = 0
    while line := readline(MAX_LINE_BYTES + 1):
        n += 1
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while (rest := readline(_READ_CHUNK)) and not rest.endswith(b"\n"):
                pass
            yield n, None
        else:
            yield n, line


def parse(stream: Iterable[bytes | str] | IO[bytes], name: str, *,
          claim_id: str | None = None) -> Iterator[RawRecord]:
    """Records from JSON Lines (bytes or text lines), one per non-blank line, ref ``name:n``.

    ``claim_id`` is given to lines that name none (loading one claim's knowledge store).
    """
    for n, line in _lines(stream):
        ref, where = f"{name}:{n}", f"line {n}"
        if line is None:
            yield RawRecord(ref, None, f"{where}: longer than {MAX_LINE_BYTES} bytes")
            continue
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError as err:
                yield RawRecord(ref, None, f"{where}: not UTF-8 text (byte {err.start})")
                continue
        if not line.strip():
            continue
        try:
            yield RawRecord(ref, _fields(loads(line), claim_id))
        except ValueError as err:
            yield RawRecord(ref, None, f"{where}: not JSON ({err})")
        except _BadLine as err:
            yield RawRecord(ref, None, f"{where}: {err}")


def read_evidence(paths: Iterable[Path | str] | Path | str, *,
                  claim_id: str | None = None) -> Iterator[RawRecord]:
    """Records from JSON Lines files, one file after the other, streamed line by line.

    A file that cannot be opened becomes one error record whose ``ref`` is the path as given;
    the other files are still read.
    """
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    for item in items:
        path = Path(item)
        if not path.is_file():
            yield RawRecord(str(item), None, "no such file" if not path.exists() else "not a regular file")
            continue
        try:
            with path.open("rb") as fh:
                yield from parse(fh, path.name, claim_id=claim_id)
        except OSError as err:
            yield RawRecord(str(item), None, f"cannot read: {err.strerror or err}")
