"""One path from input to records: ``parse_bytes`` (an HTTP body) and ``read_records`` (files)
differ only in where the text comes from (a ``Source``); both choose the format with
``choose_format`` and run the reader the dispatch tables name.

Readers never raise on bad data: one broken line, row or file becomes one error record and
reading goes on, so the ingest report can list every reject with its reason.
"""
from __future__ import annotations

import codecs
import io
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from plugin.ingest.formats import claimreview, json_doc, jsonl, multiclaim, table
from plugin.ingest.formats.base import Format, RawRecord, Unreadable, loads

__all__ = ["Source", "choose_format", "parse_bytes", "read_records"]

_StreamParser = Callable[[Iterable[str], str], Iterator[RawRecord]]

#: Formats read line by line from a text stream, with the ``newline`` mode that stream needs.
_STREAM_PARSERS: dict[Format, tuple[_StreamParser, str]] = {
    Format.jsonl: (jsonl.parse, jsonl.NEWLINE),
    Format.csv: (table.parse, table.NEWLINE),
    Format.multiclaim: (multiclaim.parse, multiclaim.NEWLINE),
}
#: Formats read as one JSON document.
_DOC_PARSERS: dict[Format, Callable[[Any, str], Iterator[RawRecord]]] = {
    Format.json: json_doc.parse,
    Format.claimreview: claimreview.parse,
}
#: Extensions that name a format by themselves. ``.json`` and ``.jsonld`` are not here: the
#: content decides between a plain JSON array, ClaimReview and JSON Lines, as for any other name.
_EXTENSIONS = {".jsonl": Format.jsonl, ".ndjson": Format.jsonl, ".csv": Format.csv}

_SNIFF_CHUNK = 4096


@dataclass(frozen=True)
class Source:
    """Decoded text under a name: ``name`` prefixes the refs and its extension hints the format;
    ``open(newline)`` gives a fresh text stream over the whole input, so a reader can stream a
    large file rather than hold it."""

    name: str
    open: Callable[[str], TextIO]

    def first_line(self) -> str:
        with self.open("") as fh:
            return fh.readline()

    def text(self) -> str:
        with self.open("") as fh:  # "" keeps "\r\n" as sent, as the stream readers see it
            return fh.read()

    def starts_like_json(self) -> bool:
        """Whether the first non-blank character opens a JSON object or array (read in chunks,
        so a large file that is not JSON is refused without being read whole)."""
        with self.open("") as fh:
            while chunk := fh.read(_SNIFF_CHUNK):
                if stripped := chunk.lstrip():
                    return stripped[0] in "{["
        return False


def _valid_formats() -> str:
    return ", ".join(f.value for f in Format if f is not Format.auto)


def _sniff(source: Source) -> tuple[Format, Any]:
    """json / claimreview / jsonl from the content; returns the parsed document, if any."""
    if not source.starts_like_json():
        raise Unreadable(f"cannot tell the format of {source.name!r} (not JSON); "
                         f"give one of: {_valid_formats()}")
    text = source.text()
    try:
        doc = loads(text)
    except ValueError as err:
        if isinstance(err, json.JSONDecodeError) and err.msg == "Extra data":
            first = next((ln for ln in text.split("\n") if ln.strip()), "")
            try:
                if isinstance(loads(first), dict):
                    return Format.jsonl, None  # JSON Lines under a .json name or in a body
            except ValueError:
                pass
        raise Unreadable(f"invalid JSON: {err}") from None
    return (Format.claimreview if claimreview.looks_like(doc) else Format.json), doc


def choose_format(fmt: Format, source: Source) -> tuple[Format, Any]:
    """The format to read ``source`` with, and the JSON document when choosing parsed it.

    The single rule for both paths: an explicit format (anything but ``auto``) is used as given
    (a MultiClaim directory counts as an explicit ``multiclaim``); else ``.jsonl``/``.ndjson``
    mean JSON Lines and ``.csv`` means CSV, MultiClaim when its header names ``fact_check_id``
    and ``instances``; else — ``.json``, ``.jsonld``, an unknown extension or none (an HTTP body
    is named "body") — the content decides: one JSON document is ``claimreview`` when it holds a
    ClaimReview node or a Fact Check Tools response and ``json`` otherwise, one JSON object per
    line is ``jsonl``, and anything else is refused ("cannot tell the format … (not JSON)").

    Until this rule, ``parse_bytes`` sniffed an unknown extension's content while
    ``read_records`` refused the file ("cannot tell the format from the extension '.txt'").
    """
    if fmt is not Format.auto:
        return fmt, None
    by_extension = _EXTENSIONS.get(Path(source.name).suffix.lower())
    if by_extension is Format.csv:
        return (Format.multiclaim if multiclaim.looks_like(source.first_line()) else Format.csv), None
    if by_extension is not None:
        return by_extension, None
    return _sniff(source)


def _records(source: Source, fmt: Format) -> Iterator[RawRecord]:
    fmt, doc = choose_format(fmt, source)
    if fmt in _STREAM_PARSERS:
        parser, newline = _STREAM_PARSERS[fmt]
        with source.open(newline) as fh:
            yield from parser(fh, source.name)
        return
    if doc is None:
        try:
            doc = loads(source.text())
        except ValueError as err:
            raise Unreadable(f"invalid JSON: {err}") from None
    yield from _DOC_PARSERS[fmt](doc, source.name)


def _not_utf8(offset: int) -> Unreadable:
    return Unreadable(f"not UTF-8 text (byte {offset})")


# ----------------------------------------------------------------------------- bytes

def _bytes_source(data: bytes, name: str) -> Source:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise _not_utf8(err.start) from None
    return Source(name, lambda newline: io.StringIO(text, newline=newline))


def parse_bytes(data: bytes, fmt: Format | str, name: str = "body") -> Iterator[RawRecord]:
    """Records from an in-memory body (an HTTP upload): JSON array, JSON Lines, ClaimReview, CSV.

    ``auto`` follows ``choose_format`` with ``name`` as the file name. Raises ``BadInput`` only
    for an unknown format name; everything wrong with the data comes back as error records (a
    body that cannot be read at all as one record whose ``ref`` is ``name``).
    """
    fmt = Format.parse(fmt)

    def gen() -> Iterator[RawRecord]:
        try:
            yield from _records(_bytes_source(data, name), fmt)
        except Unreadable as err:
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
                raise _not_utf8(offset + err.start) from None
            offset += len(chunk)
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError as err:
            raise _not_utf8(offset + err.start) from None


def _file_source(path: Path, fmt: Format) -> tuple[Source, Format]:
    """The file to read, as a source; a MultiClaim directory means its ``fact_checks.csv``."""
    if path.is_dir():
        inner = path / "fact_checks.csv"
        if fmt not in (Format.auto, Format.multiclaim):
            raise Unreadable("is a directory")
        if not inner.is_file():
            raise Unreadable("is a directory without fact_checks.csv")
        path, fmt = inner, Format.multiclaim
    elif not path.exists():
        raise Unreadable("no such file")
    elif not path.is_file():
        raise Unreadable("not a regular file")
    _check_utf8(path)
    return Source(path.name, lambda newline: path.open(encoding="utf-8-sig", newline=newline)), fmt


def _image_path_from(folder: Path, record: RawRecord) -> RawRecord:
    """The record with a relative ``image_path`` made relative to the folder of the file that
    names it (where a feed keeps its images), not to the working directory."""
    path = (record.data or {}).get("image_path")
    if not isinstance(path, str) or not path.strip() or Path(path.strip()).expanduser().is_absolute():
        return record
    return RawRecord(record.ref, {**record.data, "image_path": str(folder / path.strip())}, record.error)


def read_records(paths: Iterable[Path | str] | Path | str,
                 fmt: Format | str = Format.auto) -> Iterator[RawRecord]:
    """Records from files (or MultiClaim directories), one file after the other.

    ``auto`` follows ``choose_format`` with the file's name. A file that cannot be read at all
    (missing, not UTF-8, not a format we can tell, broken JSON document) becomes one error record
    whose ``ref`` is the path as given; the other files are still read. A relative
    ``image_path`` is read from the record's file's folder. Raises ``BadInput`` only for an
    unknown format name.
    """
    fmt = Format.parse(fmt)
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)

    def gen() -> Iterator[RawRecord]:
        for item in items:
            try:
                folder = Path(item) if Path(item).is_dir() else Path(item).parent
                for record in _records(*_file_source(Path(item), fmt)):
                    yield _image_path_from(folder, record)
            except Unreadable as err:
                yield RawRecord(str(item), None, str(err))
            except OSError as err:
                yield RawRecord(str(item), None, f"cannot read: {err.strerror or err}")
            except UnicodeDecodeError as err:  # file changed under us after the check
                yield RawRecord(str(item), None, f"not UTF-8 text ({err.reason})")

    return gen()
