"""Checks on an ingest body before any work is done for it: the format it is in, that it is
non-empty UTF-8 text of the shape that format needs and, before it is queued, that at least one
record in it is valid — so a wholly bad upload is a 4xx now rather than a job that rejects
everything later.

Plain functions, no Flask: the route hands in the content type, the ``format`` query parameter
and the raw bytes, and every refusal is a ``plugin.errors`` error (400, 415 or 422).
"""
from __future__ import annotations

from plugin.errors import BadInput, ContentTooLarge, InvalidRequest, UnsupportedContentType
from plugin.ingest.formats import Format, RawRecord, parse_bytes
from plugin.ingest.formats.base import loads
from plugin.ingest.pipeline import IngestReport, to_factcheck

__all__ = ["CONTENT_TYPES", "UnsupportedContentType", "check_any_valid", "check_report",
           "check_shape", "decode_body", "format_for", "preflight"]

#: Content types an ingest body may be sent as, and the format each implies.
CONTENT_TYPES: dict[str, Format] = {
    "application/json": Format.auto, "application/ld+json": Format.claimreview,
    "application/x-ndjson": Format.jsonl, "application/jsonl": Format.jsonl,
    "application/jsonlines": Format.jsonl, "text/csv": Format.csv,
}




def format_for(content_type: str | None, format_param: str | None = None) -> Format:
    """``?format=`` when given (an unknown name is a 400 listing the valid ones), else the format
    the content type implies (parameters such as ``; charset=utf-8`` are ignored); any other
    content type is a 415 that lists the ones read."""
    if format_param:
        return Format.parse(format_param)
    mimetype = (content_type or "").split(";", 1)[0].strip().lower()
    if mimetype in CONTENT_TYPES:
        return CONTENT_TYPES[mimetype]
    raise UnsupportedContentType(f"send fact-checks as one of {', '.join(CONTENT_TYPES)}, "
                                 f"not {mimetype or 'no content type'!r}")


def decode_body(data: bytes) -> str:
    """The body as text (a UTF-8 byte-order mark is dropped); an empty or all-blank body, or one
    that is not UTF-8, is a 400."""
    if not data.strip():
        raise BadInput("the body is empty: send a JSON array, JSON Lines or ClaimReview JSON-LD")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BadInput(f"the body is not UTF-8 text (byte {exc.start})") from None


#: Records one body may hold, counted cheaply before anything is parsed: 16 MiB of ``[{},{},…]``
#: is 5.5 million empty objects, which took ~30 s and ~2 GB to parse and reject one by one. A real
#: fact-check is hundreds of bytes, so no real upload within the size limit comes near it.
MAX_BODY_RECORDS = 500_000


def check_size(text: str, fmt: Format) -> None:
    """A refusal, before parsing, of a body with more records than ``MAX_BODY_RECORDS``: counted
    as lines for CSV, as opening braces for the JSON formats (every record is an object; nested
    objects only make the count an overestimate, which a real upload stays far below)."""
    count = text.count("\n") + 1 if fmt in (Format.csv, Format.multiclaim) else text.count("{")
    if count > MAX_BODY_RECORDS:
        raise BadInput(f"the body holds more than {MAX_BODY_RECORDS:,} records: split it into "
                       "several uploads")


def check_shape(text: str, fmt: Format) -> None:
    """Refuse a body that cannot hold records before it is queued: a JSON body must be an array
    or an object, a JSON Lines body must start with an object. CSV is judged row by row later."""
    check_size(text, fmt)
    if fmt in (Format.auto, Format.json, Format.claimreview):
        try:
            doc = loads(text)
        except ValueError:
            if fmt is Format.auto:  # JSON Lines sent as application/json: judged line by line
                check_shape(text, Format.jsonl)
                return
            raise BadInput(f"the body is not valid JSON (read as {fmt.value})") from None
        if not isinstance(doc, (list, dict)):
            raise InvalidRequest("the body must be a JSON array of fact-checks or a ClaimReview object, "
                                 f"not a JSON {type(doc).__name__}")
    elif fmt is Format.jsonl:
        first = next((line for line in text.splitlines() if line.strip()), "")
        try:
            ok = isinstance(loads(first), dict)
        except ValueError:
            ok = False
        if not ok:
            raise InvalidRequest("a JSON Lines body must have one JSON object per line; the first is not one")


def _nothing_accepted(report: IngestReport, fmt: Format, verb: str) -> InvalidRequest:
    """The 422 for a body that yielded no good record: none at all, or only rejects (listed)."""
    if not report.rejected:
        return InvalidRequest(f"the body holds no fact-check records (read as {fmt.value})")
    return InvalidRequest(f"no fact-check in the body {verb} ({report.rejected} rejected)",
                          errors=[{"field": r["record"], "message": r["reason"], "type": "record"}
                                  for r in report.rejects])


def has_image(raw: RawRecord) -> bool:
    """Whether a record gives an image the ingest must fetch or read (``image_url``,
    ``image_base64``): the API queues such a body, so that workers do that work."""
    return bool(raw.data and (raw.data.get("image_url") or raw.data.get("image_base64")))


def check_image_count(data: bytes, fmt: Format, limit: int) -> None:
    """A body to queue gives at most ``limit`` records with an image (``has_image``): each costs
    its worker a fetch and a reading (seconds), and one job must finish within the task time
    limit, so a larger feed is refused whole (413, nothing written) with how to split it."""
    count = sum(has_image(raw) for raw in parse_bytes(data, fmt, "body"))
    if count > limit:
        raise ContentTooLarge(f"the body gives {count} records with an image; one body may give at "
                              f"most {limit} (FACTSIEVE_IMAGE_INGEST_MAX_RECORDS): send it in parts")


def check_any_valid(data: bytes, fmt: Format) -> None:
    """Before queueing a body, make sure at least one record in it is valid (stops at the first),
    so a wholly bad upload is a 422 now rather than a job that rejects everything later."""
    report = IngestReport()
    for raw in parse_bytes(data, fmt, "body"):
        result = to_factcheck(raw)
        if not isinstance(result, str):
            return
        report.reject(raw.ref, result)
    raise _nothing_accepted(report, fmt, "is valid")


def check_report(report: IngestReport, fmt: Format) -> None:
    """After a synchronous ingest: a 422 when no record was indexed or updated (listing the
    rejects), the same answer ``check_any_valid`` gives a queued body."""
    if not (report.indexed or report.updated):
        raise _nothing_accepted(report, fmt, "was accepted")


def preflight(data: bytes, fmt: Format, *, deep: bool) -> str:
    """Every check an ingest body passes before it is read for real: not empty, UTF-8, the shape
    ``fmt`` needs and, when ``deep`` (the body is about to be queued), at least one valid record.
    Returns the decoded text, which is what a queued job stores."""
    text = decode_body(data)
    check_shape(text, fmt)
    if deep:
        check_any_valid(data, fmt)
    return text
