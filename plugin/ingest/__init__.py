"""Reading and loading fact-check feeds: format parsers (``formats``, a module per format), the
validating, embedding, bulk-indexing pipeline (``pipeline``), a record's image (``images``: its
bytes, through the image stage) and the checks an uploaded body passes before it is ingested or
queued (``preflight``)."""
from plugin.ingest.formats import Format, RawRecord, parse_bytes, read_records
from plugin.ingest.pipeline import IngestReport, ingest, validate, validation_reason

__all__ = [
    # formats
    "Format", "RawRecord", "parse_bytes", "read_records",
    # pipeline
    "IngestReport", "ingest", "validate", "validation_reason",
]
