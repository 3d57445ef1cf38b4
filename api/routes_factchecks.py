"""Fact-check and evidence routes: ingestion (in the request, or as a job when large), one
fact-check, and its deletion by its owner."""
from __future__ import annotations

from flask import Response, g, request

from plugin.errors import BadInput, UnsupportedContentType
from plugin.ingest import Format, parse_bytes, preflight
from plugin.service.jobs import JobKind
from plugin.service.keys import Scope

from api import schemas as s
from api.bodies import read_body
from api.routing import accepted, enqueue, no_content, reply, route, services


# -- fact-checks --------------------------------------------------------------------------------
#: A text body (JSON Lines, CSV): an empty or all-blank one is a 400 (``preflight.decode_body``).
NOT_BLANK_TEXT = {"type": "string", "minLength": 1, "pattern": r"\S"}
#: The body schema of each format a content type implies; the documented content types are
#: exactly the ones ``preflight.CONTENT_TYPES`` reads (text/csv and the JSON Lines aliases too).
_INGEST_SCHEMAS = {
    Format.auto: {"oneOf": [
        {"type": "array", "items": {"$model": s.FactCheckItem}, "minItems": 1, "maxItems": 100000},
        {"$model": s.ClaimReviewIn}]},
    Format.claimreview: {"$model": s.ClaimReviewIn},
    Format.jsonl: {**NOT_BLANK_TEXT, "description": "one fact-check JSON object per line"},
    Format.csv: {**NOT_BLANK_TEXT, "description": "a header row naming the columns (claim, id, url, "
                                                  "rating, …), then one fact-check a row"},
}
_INGEST_BODY = {"required": True, "content": {
    mimetype: {"schema": _INGEST_SCHEMAS[fmt]} for mimetype, fmt in preflight.CONTENT_TYPES.items()}}
_INGEST_QUERY = [
    {"name": "format", "in": "query", "required": False,
     "schema": {"type": "string", "enum": [f.value for f in Format]},
     "description": "the body's format when it is not the one its content type implies (e.g. "
                    "`multiclaim` for MultiClaim's CSV sent as text/csv); a body that is not in "
                    "this format is refused (422, naming what is missing)"},
    {"name": "async", "in": "query", "required": False, "schema": {"type": "boolean"},
     "description": "always run as a job (bodies over the sync limit always do)"},
]


def _flag(name: str) -> bool:
    value = request.args.get(name, "false").strip().lower()
    if value not in ("true", "false", "1", "0", "yes", "no", ""):
        raise BadInput(f"query parameter {name} must be true or false, got {value!r}")
    return value in ("true", "1", "yes")


@route("POST", "/v1/fact-checks", summary="Ingest fact-checks: JSON array, JSON Lines or ClaimReview",
       tag="fact-checks", scope=Scope.WRITE, raw_body=_INGEST_BODY, query=_INGEST_QUERY,
       response=s.IngestReport, also={202: s.JobAccepted}, errors=(409, 502),
       description="Bodies up to the sync limits (FACTSIEVE_SYNC_INGEST_MAX_BYTES and _RECORDS) are "
                   "ingested in the request and answered with the per-record report (422 when no "
                   "record was accepted); larger ones, and those with a record carrying an image "
                   "(image_url, image_base64, a ClaimReview's image), become a job, whose worker "
                   "fetches and reads the images (a record whose image cannot be read is "
                   "rejected, naming why; image_path, a local file, is read by the CLI only; a "
                   "body with more records with an image than FACTSIEVE_IMAGE_INGEST_MAX_RECORDS "
                   "is a 413: send it in parts). "
                   "The corpus is shared: every tenant matches against all of it, but a record whose "
                   "id another tenant ingested is rejected (only its owner or an admin key may "
                   "update it); the rest of the batch is ingested.")
def ingest_factchecks() -> Response:
    svc = services()
    run_async = _flag("async")
    fmt = preflight.format_for(request.mimetype, request.args.get("format"))
    data = read_body(svc.settings.max_request_bytes, "FACTSIEVE_MAX_REQUEST_BYTES")
    queue = run_async or len(data) > svc.settings.sync_ingest_max_bytes
    text = preflight.preflight(data, fmt, deep=queue)
    records = None if queue else list(parse_bytes(data, fmt, "body"))
    if records is not None and (len(records) > svc.settings.sync_ingest_max_records
                                or any(preflight.has_image(r) for r in records)):
        # too many records, or images to fetch and read: the workers' work
        preflight.check_any_valid(data, fmt)  # what a queued body passes first (a 422 now)
        queue, records = True, None
    if queue:
        preflight.check_image_count(data, fmt, svc.settings.image_ingest_max_records)
        job, _ = svc.jobs.create(JobKind.INGEST, {"format": fmt.value, "name": "body",
                                                  "bytes": len(data),
                                                  "writer": g.api_key.writer.to_dict()},
                                 body=text, tenant=g.api_key.tenant)
        enqueue(job["id"])
        return accepted(job)
    report = svc.factchecks.ingest(records, writer=g.api_key.writer)
    preflight.check_report(report, fmt)
    return reply(s.IngestReport.model_validate(report.to_dict()))


@route("POST", "/v1/evidence", summary="Load evidence documents (JSON Lines)",
       tag="evidence", scope=Scope.WRITE, response=s.EvidenceReport, also={202: s.JobAccepted},
       errors=(409, 502),
       raw_body={"required": True, "content": {mimetype: {"schema": {
           **NOT_BLANK_TEXT, "description": "one document per line: {url, title, text, published_at, "
                                            "lang} or AVeriTeC's {url, url2text: [sentences]}"}}
           for mimetype, fmt in preflight.CONTENT_TYPES.items() if fmt is Format.jsonl}},
       query=[{"name": "claim_id", "in": "query", "required": False, "schema": {"type": "string"},
               "description": "the claim whose knowledge store these documents are"},
              {"name": "async", "in": "query", "required": False, "schema": {"type": "boolean"},
               "description": "always run as a job (large bodies always do)"}],
       description="Documents are split into overlapping passages, embedded and indexed in the "
                   "evidence alias; the report counts indexed / updated / rejected passages, with "
                   "each reject's reason (422 when no document is valid). The passage caps are "
                   "checked on the whole body before anything is written: a document over the "
                   "per-document cap is rejected, a body over the per-request cap is a 413. "
                   "Bodies over the sync limit, or that make more passages than the sync "
                   "passage limit, become a job (202). Evidence is shared like the fact-checks: a "
                   "document another tenant ingested (same URL and claim) is rejected, not "
                   "overwritten (its owner or an admin may update it).")
def ingest_evidence_route() -> Response:
    svc = services()
    settings = svc.settings
    if request.mimetype not in preflight.CONTENT_TYPES or preflight.CONTENT_TYPES[request.mimetype] is not Format.jsonl:
        raise UnsupportedContentType("send evidence as application/x-ndjson (one JSON document per line), "
                                     f"not {request.mimetype or 'no content type'!r}")
    run_async = _flag("async")
    claim_id = request.args.get("claim_id")
    data = read_body(settings.max_request_bytes, "FACTSIEVE_MAX_REQUEST_BYTES")
    plan = svc.evidence.plan(data, claim_id)  # 400 / 413 / 422 now, before any write or job
    if (run_async or len(data) > settings.sync_ingest_max_bytes
            or plan.passages > settings.sync_evidence_max_passages):
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise BadInput(f"an evidence body run as a job must be UTF-8 text throughout (byte "
                           f"{exc.start} is not)") from None
        job, _ = svc.jobs.create(JobKind.EVIDENCE, {"name": "body", "bytes": len(data),
                                                    "claim_id": claim_id, "documents": plan.documents,
                                                    "passages": plan.passages,
                                                    "writer": g.api_key.writer.to_dict()},
                                 body=text, tenant=g.api_key.tenant)
        enqueue(job["id"])
        return accepted(job)
    report = svc.evidence.ingest_body(data, claim_id, writer=g.api_key.writer)
    return reply(s.EvidenceReport.model_validate(report.to_dict()))


@route("GET", "/v1/fact-checks/<path:fact_check_id>", summary="One stored fact-check",
       tag="fact-checks", response=s.FactCheckOut, errors=(502,))
def get_factcheck(fact_check_id: str) -> Response:
    from plugin import owners

    svc = services()
    doc = dict(svc.store.get(svc.settings.index, fact_check_id, noun="fact-check"))
    if g.api_key.sees not in (None, owners.owner_of(doc)):
        doc.pop(owners.FIELD, None)  # the corpus is shared; who wrote it is the owner's business
    return reply(s.FactCheckOut.model_validate(doc))


@route("DELETE", "/v1/fact-checks/<path:fact_check_id>", summary="Delete a fact-check",
       tag="fact-checks", scope=Scope.WRITE, status=204, errors=(403, 404, 409, 502),
       description="Only the tenant that ingested it (its owner) or an admin key may delete a "
                   "fact-check; another tenant's is a 403 (the corpus is readable by all, so "
                   "its existence is no secret). Fact-checks stored before owners were "
                   "recorded belong to the tenant `default`.")
def delete_factcheck(fact_check_id: str) -> Response:
    services().factchecks.delete(fact_check_id, g.api_key.writer)
    return no_content()
