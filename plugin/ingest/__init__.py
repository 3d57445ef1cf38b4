"""Reading and loading fact-check feeds: format parsers (``formats``) and the validating,
embedding, bulk-indexing pipeline (``pipeline``)."""
from .formats import Format, RawRecord, parse_bytes, read_records
from .pipeline import IngestReport, ingest, validate, validation_reason

__all__ = [
    # formats
    "Format", "RawRecord", "parse_bytes", "read_records",
    # pipeline
    "IngestReport", "ingest", "validate", "validation_reason",
]
