"""CSV with a header row: one fact-check per row, columns mapped onto FactCheck fields by name.

``rows`` and ``records`` are shared with the MultiClaim reader, which is CSV with other cells.
"""
from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from plugin.ingest.formats.base import RawRecord, Unreadable, guarded, map_fields

#: A fact-check has a dozen fields; a header far wider is not a fact-check table, and every
#: row of it would become a dict that wide.
MAX_COLUMNS = 1000

#: The longest cell read: an ``image_base64`` cell holds a whole image (the default
#: ``FACTSIEVE_IMAGE_MAX_BYTES`` in base64 is under 11 MiB), where the csv module stops at 128 KiB.
#: The module's limit is process-wide; it is only ever raised to this.
MAX_CELL_CHARS = 16 * 1024 * 1024

#: CSV handles quoted line breaks itself, so its stream must not translate newlines.
NEWLINE = ""

_Row = tuple[int, "dict[str, Any] | None", "str | None"]


def rows(stream: Iterable[str], required: frozenset[str] = frozenset()) -> Iterator[_Row]:
    """``(line, row, error)`` per data row; ``line`` is where the row starts (header = line 1).

    Empty cells become ``None``; a row with the wrong number of cells is an error rather than a
    guess at which column went missing. A bad header (or one lacking a ``required`` column,
    compared lower-cased) makes the whole input unreadable.
    """
    csv.field_size_limit(max(csv.field_size_limit(), MAX_CELL_CHARS))
    reader = csv.reader(stream)
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as err:
        raise Unreadable(f"invalid CSV header: {err}") from None
    if len(header) > MAX_COLUMNS:
        raise Unreadable(f"CSV header has {len(header)} columns; at most {MAX_COLUMNS} are read")
    header = [h.strip() or f"column_{i}" for i, h in enumerate(header, 1)]
    counts = Counter(header)  # linear: header.count per column was quadratic in the width
    repeated = sorted(h for h, n in counts.items() if n > 1)
    if repeated:  # a dict per row would silently keep only the last of them
        shown = ", ".join(h[:40] for h in repeated[:10])
        more = f" and {len(repeated) - 10} more" if len(repeated) > 10 else ""
        raise Unreadable(f"CSV header repeats column(s): {shown}{more}")
    missing = required - {h.lower() for h in header}
    if missing:
        raise Unreadable(f"CSV header lacks column(s): {', '.join(sorted(missing))}")
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


def records(stream: Iterable[str], name: str, build: Callable[[dict[str, Any]], dict[str, Any]],
            required: frozenset[str] = frozenset()) -> Iterator[RawRecord]:
    """A record per data row, its data from ``build(row)``; refs are ``<name>:<line>``."""
    for line, row, error in rows(stream, required):
        ref = f"{name}:{line}"
        if row is None:
            yield RawRecord(ref, None, error)
        else:
            yield guarded(ref, f"line {line}", build, row)


def header_columns(first_line: str) -> set[str]:
    """The lower-cased column names in a CSV header line; empty when it does not parse."""
    try:
        return {h.strip().lower() for h in next(csv.reader([first_line]), [])}
    except csv.Error:
        return set()


def parse(stream: Iterable[str], name: str) -> Iterator[RawRecord]:
    return records(stream, name, map_fields)
