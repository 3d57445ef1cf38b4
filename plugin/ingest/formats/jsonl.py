"""JSON Lines (``.jsonl``, ``.ndjson``): one fact-check object per line; blank lines are skipped.

The stream must split on "\\n" only (``newline="\\n"``), as the JSON Lines spec says, so a stray
"\\r" inside a line does not shift the line numbers in refs.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

from plugin.ingest.formats.base import RawRecord, loads, object_record

#: The ``newline`` mode the text stream handed to ``parse`` must be opened with.
NEWLINE = "\n"


def parse(stream: Iterable[str], name: str) -> Iterator[RawRecord]:
    for n, line in enumerate(stream, 1):
        if not line.strip():
            continue
        ref = f"{name}:{n}"
        try:
            obj = loads(line)
        except ValueError as err:
            yield RawRecord(ref, None, f"line {n}: invalid JSON: {err}")
            continue
        yield object_record(obj, ref, f"line {n}")
