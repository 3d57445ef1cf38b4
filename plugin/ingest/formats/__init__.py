"""Readers for the fact-check feed formats FactSieve accepts, one module per format.

Every reader turns its input into a stream of ``RawRecord``: a reference back to the source
(``feed.jsonl:12``) and either a dict ready for ``FactCheck.model_validate`` or the reason the
record could not be read. ``dispatch.choose_format`` picks the format (explicit, else the
extension, else the content) the same way for bodies and files.

- ``base``: ``Format``, ``RawRecord``, field mapping shared by the flat formats
- ``jsonl``, ``json_doc``, ``table`` (CSV): flat fact-check objects, lines or rows
- ``claimreview``: schema.org ClaimReview JSON-LD and Google Fact Check Tools responses
- ``multiclaim``: the MultiClaim dataset's ``fact_checks.csv``
"""
from plugin.ingest.formats.base import Format, RawRecord
from plugin.ingest.formats.dispatch import parse_bytes, read_records

__all__ = ["Format", "RawRecord", "parse_bytes", "read_records"]
