"""The API's routes. Each is declared once with ``route`` (which also documents it in the
OpenAPI spec), authenticates with the key's scope and rate limit, validates its body with a
pydantic model, calls ``plugin`` and answers JSON. Slow work goes to the workers as a job.
"""
from __future__ import annotations


import functools
import json
import re
from collections.abc import Callable
from typing import Any

from flask import Blueprint, Response, current_app, g, request
from pydantic import BaseModel, ValidationError
from werkzeug.exceptions import UnsupportedMediaType

from plugin.errors import (BadInput, FactSieveError, Forbidden, InvalidRequest, NotFound,
                           Unauthorized, UnsupportedContentType)
from plugin.ingest import Format, parse_bytes, preflight
from plugin.params import parse_int
from plugin.service.jobs import JobKind, JobStatus
from plugin.service.keys import Scope, client_address
from plugin.service.webhooks import MAX_SECRET_OVERLAP_S, SECRET_OVERLAP_S
from plugin.search.matcher import MatchRequest
from plugin.service.handlers import verify_request
from plugin.service.services import Services

from api import schemas as s
from api.bodies import has_body, read_body
from api.openapi import Api, Operation
from api.problems import problem, problem_response

bp = Blueprint("api", __name__)
api = Api()

def services() -> Services:
    return current_app.extensions["factsieve"]  # type: ignore[no-any-return]


# -- plumbing ------------------------------------------------------------------------------------
def route(method: str, rule: str, *, summary: str, tag: str, scope: Scope | None = Scope.READ,
          status: int = 200, response: type[BaseModel] | None = None,
          body: type[BaseModel] | None = None, raw_body: dict[str, Any] | None = None,
          query: list[dict[str, Any]] | None = None, errors: tuple[int, ...] = (),
          also: dict[int, type[BaseModel]] | None = None, description: str = "") -> Callable:
    def deco(fn: Callable[..., Response]) -> Callable[..., Response]:
        api.add(Operation(method=method, rule=rule, endpoint=fn.__name__, summary=summary,
                          scope=scope, status=status, response=response, body=body,
                          raw_body=raw_body, query=query or [], errors=errors, also=also or {},
                          tag=tag, description=description))

        declared = frozenset(q["name"] for q in query or ())

        @functools.wraps(fn)
        def view(**kwargs: Any) -> Response:
            if scope is not None:
                _authorize(scope)
            refuse_undeclared_query(declared)
            if body is None and raw_body is None:
                refuse_body()
            if body is not None:
                kwargs["body"] = read_json(body)
            return fn(**kwargs)

        bp.add_url_rule(rule, endpoint=fn.__name__, view_func=view, methods=[method],
                        strict_slashes=False)
        return view

    return deco


def _authorize(needed: Scope) -> None:
    svc = services()
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    try:
        key = svc.keys.authenticate(token.strip() if scheme.lower() == "bearer" else None)
    except Unauthorized:  # no key to count against: count the client address (429 past its limit)
        svc.keys.hit_unauthenticated(client_address(
            request.remote_addr, request.headers.get("X-Forwarded-For"), svc.settings.trust_x_forwarded_for))
        raise
    remaining, reset = svc.keys.hit(key.id)
    g.rate_limit = (svc.keys.limit, remaining, reset)
    if not key.scope.allows(needed):
        raise Forbidden(f"API key {key.id} has scope {key.scope.value!r}; this route needs "
                        f"{needed.value!r}")
    g.api_key = key


def refuse_undeclared_query(declared: frozenset[str]) -> None:
    """A query parameter the operation does not declare is a 400 naming it, not silently
    ignored: a misspelt ``?asnyc=true`` would otherwise run the request the other way."""
    unknown = sorted(set(request.args) - declared)
    if unknown:
        allowed = ", ".join(sorted(declared)) or "none"
        raise BadInput(f"unknown query parameter{'s' if len(unknown) > 1 else ''} "
                       f"{', '.join(repr(n[:80]) for n in unknown[:10])}; this operation takes: {allowed}",
                       errors=[{"field": name[:80], "message": "unknown query parameter",
                                "type": "query_unknown"} for name in unknown[:10]])


def refuse_body() -> None:
    """A body sent to an operation that takes none is a 400, not silently ignored: a rotation
    asked for with ``{"overlap_s": 0}`` in the body would otherwise keep the old secret valid."""
    if has_body():
        raise BadInput("this operation takes no request body; its inputs are the path and the "
                       "query parameters it documents")


def _is_json(mimetype: str) -> bool:
    return mimetype == "application/json" or (mimetype.startswith("application/")
                                              and mimetype.endswith("+json"))


def read_json(model: type[BaseModel]) -> BaseModel:
    if not _is_json(request.mimetype):
        raise UnsupportedMediaType(f"send the body as application/json, not "
                                   f"{request.mimetype or 'no content type'!r}")
    raw = read_body(services().settings.max_json_bytes, "FACTSIEVE_MAX_JSON_BYTES")
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        errs = exc.errors(include_url=False, include_context=False)
        if any(e["type"] == "json_invalid" for e in errs):
            raise BadInput(f"the body is not valid JSON: {errs[0]['msg']}") from None
        fields = [{"field": ".".join(str(p) for p in e["loc"]) or "(body)",
                   "message": e["msg"].removeprefix("Value error, "), "type": e["type"]}
                  for e in errs]
        detail = "; ".join(f"{f['field']}: {f['message']}" for f in fields[:5])
        raise InvalidRequest(f"invalid request body: {detail}", errors=fields) from None


def reply(model: BaseModel, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    resp = Response(model.model_dump_json(), status=status, mimetype="application/json")
    for name, value in (headers or {}).items():
        resp.headers[name] = value
    return resp


def no_content() -> Response:
    return Response(status=204)


def enqueue(job_id: str) -> None:
    """Send the job's task (a 503 when the queue is down; the job is then recorded as failed)."""
    from workers.names import job_sender

    services().jobs.dispatch(job_id, job_sender(current_app.extensions["factsieve.celery"]),
                             services().kv.url)


def job_url(job_id: str) -> str:
    return f"/v1/jobs/{job_id}"


def accepted(job: dict[str, Any]) -> Response:
    url = job_url(job["id"])
    return reply(s.JobAccepted(job_id=job["id"], status=job["status"], status_url=url), 202,
                 {"Location": url})


def job_out(job: dict[str, Any]) -> s.JobOut:
    return s.JobOut.model_validate({k: v for k, v in job.items() if k != "input"})


# -- health ----------------------------------------------------------------------------------------
@route("GET", "/healthz", summary="The process is up", tag="health", scope=None, response=s.Health)
def healthz() -> Response:
    return reply(s.Health(status="ok"))


@route("GET", "/readyz", summary="OpenSearch, Redis and the embedding model are reachable",
       tag="health", scope=None, response=s.Ready, errors=(503,))
def readyz() -> Response:
    svc = services()
    checks = {"opensearch": svc.store.ping(), "redis": svc.kv.ping()}
    try:
        svc.embedder  # noqa: B018 - loads the model once per process
        checks["model"] = True
    except FactSieveError:
        checks["model"] = False
    if all(checks.values()):
        return reply(s.Ready(status="ready", checks=checks))
    down = ", ".join(name for name, ok in checks.items() if not ok)
    return problem_response(problem(503, "Not ready", f"not reachable: {down}", checks=checks),
                            {"Retry-After": "5"})


@route("GET", "/openapi.json", summary="This API's OpenAPI 3.1 document", tag="health", scope=None)
def openapi() -> Response:
    return Response(json.dumps(current_app.extensions["factsieve.openapi"]), mimetype="application/json")


# -- matching -----------------------------------------------------------------------------------
@route("POST", "/v1/match", summary="Fact-checks that address a post or claim (synchronous)",
       tag="match", body=s.MatchIn, response=s.MatchOut, errors=(404, 409, 502),
       description="Hybrid BM25 + kNN retrieval fused with weighted RRF. No LLM runs; a "
                   "cross-encoder runs only with `rerank` and a configuration that has one.")
def match(body: s.MatchIn) -> Response:
    matcher = services().matcher(body.config, rerank=body.rerank)
    result = matcher.match(MatchRequest(
        text=body.text, lang=body.lang, date=body.date, mode=body.mode, k=body.k,
        within_days=body.within_days, allow=tuple(body.allow), deny=tuple(body.deny),
        rerank=body.rerank, rerank_budget_ms=body.rerank_budget_ms or services().settings.rerank_budget_ms))
    return reply(s.MatchOut.model_validate(result.to_dict()))


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
                   "record was accepted); larger ones become a job. "
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
    if records is not None and len(records) > svc.settings.sync_ingest_max_records:
        preflight.check_any_valid(data, fmt)  # what a queued body passes first (a 422 now)
        queue, records = True, None
    if queue:
        job, _ = svc.jobs.create(JobKind.INGEST, {"format": fmt.value, "name": "body",
                                                  "bytes": len(data),
                                                  "writer": g.api_key.writer.to_dict()},
                                 body=text, tenant=g.api_key.tenant)
        enqueue(job["id"])
        return accepted(job)
    report = svc.ingest_factchecks(records, writer=g.api_key.writer)
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
    plan = svc.plan_evidence(data, claim_id)  # 400 / 413 / 422 now, before any write or job
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
    report = svc.ingest_evidence_body(data, claim_id, writer=g.api_key.writer)
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
    services().delete_factcheck(fact_check_id, g.api_key.writer)
    return no_content()


# -- posts and jobs ---------------------------------------------------------------------------------
@route("POST", "/v1/posts", summary="Submit a post: a worker matches it and notifies webhooks",
       tag="posts", scope=Scope.WRITE, body=s.PostIn, status=202, response=s.PostAccepted,
       errors=(409,),
       description="Idempotent on the post id: resubmitting the same post returns its job "
                   "(duplicate: true); the same id with different content is a 409.")
def submit_post(body: s.PostIn) -> Response:
    job, created = services().jobs.submit_post(body.model_dump(mode="json", exclude_none=True),
                                               g.api_key.tenant)
    if created or job["status"] == JobStatus.QUEUED.value:
        enqueue(job["id"])
    url = job_url(job["id"])
    return reply(s.PostAccepted(post_id=body.id, job_id=job["id"], status=job["status"],
                                status_url=url, duplicate=not created), 202, {"Location": url})


@route("GET", "/v1/posts/<path:post_id>", summary="A submitted post's job and match result",
       tag="posts", response=s.JobOut)
def get_post(post_id: str) -> Response:
    return reply(job_out(services().jobs.get_post(post_id, g.api_key.tenant)))


@route("POST", "/v1/verify", summary="Verify a claim (a job)", tag="jobs", body=s.VerifyIn,
       status=202, response=s.JobAccepted,
       description="A worker verifies the claim with a named configuration: a published "
                   "fact-check that matches it well answers it (`stage: previously-fact-checked`); "
                   "otherwise evidence published before the claim date is retrieved and an LLM "
                   "asks and answers the questions that decide it, then gives a verdict with a "
                   "justification whose statements cite the question-answer pairs. The job reports "
                   "`progress` while it runs; subscribers to `claim.verified` get the result.")
def verify(body: s.VerifyIn) -> Response:
    svc = services()
    inp = body.model_dump(mode="json", exclude_none=True)
    svc.verification_config(body.config)  # an unknown configuration is a 400 now, not a failed job
    verify_request(inp).validated()  # so is a claim date in the future
    job, _ = svc.jobs.create(JobKind.VERIFY, inp, tenant=g.api_key.tenant)
    enqueue(job["id"])
    return accepted(job)


@route("POST", "/v1/rerank", summary="Match and rerank with a cross-encoder (a job)", tag="jobs",
       body=s.RerankIn, status=202, response=s.JobAccepted,
       description="Without a configured reranker the result is the fused order and says so.")
def rerank(body: s.RerankIn) -> Response:
    services().config(body.config)
    job, _ = services().jobs.create(JobKind.RERANK, body.model_dump(mode="json", exclude_none=True),
                                    tenant=g.api_key.tenant)
    enqueue(job["id"])
    return accepted(job)


@route("GET", "/v1/jobs/<job_id>", summary="A job's status and, once finished, its result or error",
       tag="jobs", response=s.JobOut)
def get_job(job_id: str) -> Response:
    return reply(job_out(services().jobs.get(job_id, g.api_key.sees)))


# -- webhooks -------------------------------------------------------------------------------------
@route("POST", "/v1/webhooks", summary="Subscribe a URL to events", tag="webhooks",
       scope=Scope.WRITE, body=s.WebhookIn, status=201, response=s.WebhookCreated,
       description="Deliveries are signed: X-FactSieve-Signature: sha256=HMAC-SHA256(secret, "
                   "'<X-FactSieve-Timestamp>.<raw body>'). The secret is returned only here.")
def create_webhook(body: s.WebhookIn) -> Response:
    try:
        sub = services().webhooks.create(body.url, body.events, body.languages, body.min_score,
                                         body.secret, owner=g.api_key.tenant)
    except BadInput as exc:
        if isinstance(exc, InvalidRequest):
            raise
        raise InvalidRequest(exc.detail, errors=[{"field": "url", "message": exc.detail,
                                                  "type": "url_refused"}]) from None
    return reply(s.WebhookCreated.model_validate(sub), 201, {"Location": f"/v1/webhooks/{sub['id']}"})


@route("GET", "/v1/webhooks", summary="All webhook subscriptions", tag="webhooks",
       response=s.WebhookList)
def list_webhooks() -> Response:
    return reply(s.WebhookList(webhooks=[s.WebhookOut.model_validate(w)
                                         for w in services().webhooks.list(g.api_key.sees)]))


#: What ``WebhookStore.create`` makes: an id in a URL is checked before it names a Redis key.
WEBHOOK_ID = re.compile(r"whk_[0-9a-f]{16}")


def owned_webhook(webhook_id: str) -> str:
    """``webhook_id`` once it has our shape and belongs to the calling key's tenant (admin: any);
    otherwise a 404, the same as for an id that does not exist."""
    if not WEBHOOK_ID.fullmatch(webhook_id):
        raise NotFound(f"no webhook subscription with id {webhook_id[:80]!r}")
    services().webhooks.get(webhook_id, g.api_key.sees)
    return webhook_id


@route("POST", "/v1/webhooks/<webhook_id>/secret", summary="Rotate a subscription's signing secret",
       tag="webhooks", scope=Scope.WRITE, response=s.WebhookCreated,
       query=[{"name": "overlap_s", "in": "query", "required": False,
               "description": "Seconds the replaced secret still signs deliveries; 0 revokes it "
                              "at once (a leaked secret)",
               "schema": {"type": "integer", "minimum": 0, "maximum": MAX_SECRET_OVERLAP_S,
                          "default": SECRET_OVERLAP_S}}],
       description="A new secret, returned only here. For `overlap_s` seconds (default 24 "
                   "hours) deliveries carry a signature with each secret (X-FactSieve-Signature: "
                   "sha256=<new>,sha256=<old>), so the receiver can switch over; a signature "
                   "matching either is valid. `overlap_s=0` signs with the new secret alone "
                   "from now on.")
def rotate_webhook_secret(webhook_id: str) -> Response:
    overlap_s = parse_int("overlap_s", request.args.get("overlap_s", str(SECRET_OVERLAP_S)),
                          lo=0, hi=MAX_SECRET_OVERLAP_S)
    sub = services().webhooks.rotate_secret(owned_webhook(webhook_id), overlap_s=overlap_s)
    return reply(s.WebhookCreated.model_validate(sub))


@route("GET", "/v1/webhooks/<webhook_id>", summary="One webhook subscription", tag="webhooks",
       response=s.WebhookOut)
def get_webhook(webhook_id: str) -> Response:
    return reply(s.WebhookOut.model_validate(services().webhooks.get(owned_webhook(webhook_id))))


@route("DELETE", "/v1/webhooks/<webhook_id>", summary="Delete a webhook subscription",
       tag="webhooks", scope=Scope.WRITE, status=204)
def delete_webhook(webhook_id: str) -> Response:
    services().webhooks.delete(owned_webhook(webhook_id))
    return no_content()


@route("GET", "/v1/webhooks/<webhook_id>/deliveries", summary="A subscription's delivery log",
       tag="webhooks", response=s.DeliveryList,
       query=[{"name": "limit", "in": "query", "required": False,
               "schema": {"type": "integer", "minimum": 1, "maximum": 500, "default": 50}}])
def list_deliveries(webhook_id: str) -> Response:
    limit = parse_int("limit", request.args.get("limit", "50"), lo=1, hi=500)
    log = services().webhooks.deliveries(owned_webhook(webhook_id), limit)
    return reply(s.DeliveryList(deliveries=[s.DeliveryOut.model_validate(d) for d in log]))

