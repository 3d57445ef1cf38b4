"""One JSON document of flat fact-check objects: an array of them, or a single object."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from plugin.ingest.formats.base import RawRecord, object_record


def parse(doc: Any, name: str) -> Iterator[RawRecord]:
    items = doc if isinstance(doc, list) else [doc]
    for i, obj in enumerate(items, 1):
        yield object_record(obj, f"{name}:{i}", f"item {i}")
