"""Reading and loading fact-check feeds: format parsers (``formats``) and the validating,
embedding, bulk-indexing pipeline (``pipeline``)."""
from plugin.ingest.formats import Format, RawRecord, parse_bytes, read_records
from plugin.ingest.pipeline import IngestReport, ingest, validate, validation_reason

__all__ = [
    # formats
    "Format", "RawRecord", "parse_bytes", "read_records",
    # pipeline
    "IngestReport", "ingest", "validate", "validation_reason",
]
