"""The API's plumbing: the one ``route`` decorator every route module declares its routes with
(it also documents them in the OpenAPI spec), authentication with the key's scope and rate
limit, body validation with a pydantic model, and the JSON replies. Slow work goes to the
workers as a job (``enqueue``).
"""
from __future__ import annotations

import base64
import functools
from collections.abc import Callable
from typing import Any

from flask import Blueprint, Response, current_app, g, request
from pydantic import BaseModel, ValidationError
from werkzeug.exceptions import UnsupportedMediaType

from plugin.errors import BadInput, FactSieveError, Forbidden, InvalidRequest, Unauthorized
from plugin.service.keys import Scope, client_address
from plugin.service.services import Services

from api import schemas as s
from api.bodies import has_body, parse_json, read_body, read_multipart
from api.openapi import Api, Operation

bp = Blueprint("api", __name__)
api = Api()


def services() -> Services:
    return current_app.extensions["factsieve"]  # type: ignore[no-any-return]


# -- plumbing ------------------------------------------------------------------------------------
def route(method: str, rule: str, *, summary: str, tag: str, scope: Scope | None = Scope.READ,
          status: int = 200, response: type[BaseModel] | None = None,
          body: type[BaseModel] | None = None, raw_body: dict[str, Any] | None = None,
          query: list[dict[str, Any]] | None = None, errors: tuple[int, ...] = (),
          also: dict[int, type[BaseModel]] | None = None, description: str = "",
          images: bool = False) -> Callable:
    """``images``: the body may carry an image (``plugin.image.inputs``): its limit allows one of
    ``image_max_bytes`` in base64, and it may come as ``multipart/form-data`` too (an ``image``
    file part, the other fields as form fields)."""
    def deco(fn: Callable[..., Response]) -> Callable[..., Response]:
        api.add(Operation(method=method, rule=rule, endpoint=fn.__name__, summary=summary,
                          scope=scope, status=status, response=response, body=body,
                          raw_body=raw_body, query=query or [], errors=errors, also=also or {},
                          tag=tag, description=description, multipart=images))

        declared = frozenset(q["name"] for q in query or ())

        @functools.wraps(fn)
        def view(**kwargs: Any) -> Response:
            if scope is not None:
                _authorize(scope)
            refuse_undeclared_query(declared)
            if body is None and raw_body is None:
                refuse_body()
            if body is not None:
                kwargs["body"] = read_with_image(body) if images else read_json(body)
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
    repeated = sorted(n for n in declared if len(request.args.getlist(n)) > 1)
    if repeated:  # ``?async=true&async=false``: one would win silently
        raise InvalidRequest(f"query parameter {repeated[0]!r} given more than once; give it once",
                             errors=[{"field": name, "message": "query parameter given more than once",
                                      "type": "query_repeated"} for name in repeated])
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


def read_json_bytes(limit: int | None = None, setting: str = "FACTSIEVE_MAX_JSON_BYTES") -> bytes:
    """The request's JSON body, unparsed (415 for another content type, 413 over the limit:
    ``max_json_bytes`` unless ``limit`` says otherwise)."""
    if not _is_json(request.mimetype):
        raise UnsupportedMediaType(f"send the body as application/json, not "
                                   f"{request.mimetype or 'no content type'!r}")
    return read_body(limit or services().settings.max_json_bytes, setting)


def read_json_value() -> Any:
    """The request's JSON body parsed, for a route that validates it in the domain (400 when it
    is not JSON: ``api.bodies.parse_json``, the same parser ``read_json``'s models use)."""
    return parse_json(read_json_bytes())


def read_json(model: type[BaseModel], limit: int | None = None,
              setting: str = "FACTSIEVE_MAX_JSON_BYTES") -> BaseModel:
    raw = read_json_bytes(limit, setting)
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        raise invalid(exc) from None


#: what sets the body limit of a route that takes an image
IMAGE_BODY_SETTING = "FACTSIEVE_MAX_JSON_BYTES plus FACTSIEVE_IMAGE_MAX_BYTES in base64"


def read_with_image(model: type[BaseModel]) -> BaseModel:
    """The body of a route that takes an image: JSON (the image base64 in ``image``) within
    ``image_body_bytes``, or ``multipart/form-data`` (the image a file part named ``image``,
    given to the model as base64; the other fields as text, a list field repeated, read as
    JSON would be read after lax conversion: ``"5"`` is 5, ``"true"`` true)."""
    from plugin.image.inputs import image_body_bytes

    limit, setting = image_body_bytes(services().settings), IMAGE_BODY_SETTING
    if request.mimetype != "multipart/form-data":
        return read_json(model, limit, setting)
    form, files = read_multipart(limit, setting)
    unknown = sorted(set(files) - {"image"})
    if unknown:
        raise BadInput(f"unknown file part {unknown[0][:80]!r}: send the image as the part named image")
    data: dict[str, Any] = {}
    repeated = []
    for name in dict.fromkeys([*form, *files]):
        values = [*form.getlist(name), *files.get(name, ())]
        field = model.model_fields.get(name)
        listed = field is not None and "list[" in str(field.annotation)
        if len(values) > 1 and not listed:
            repeated.append(name)
        data[name] = values if listed else values[0]
    if repeated:  # one of them would be read and the others silently dropped
        raise InvalidRequest(
            f"{', '.join(repr(n[:80]) for n in repeated[:10])} given more than once; "
            "give each field once (the image once: as the file part or as the image field)",
            errors=[{"field": n[:80], "message": "given more than once", "type": "field_repeated"}
                    for n in repeated[:10]])
    if "image" in files:
        data["image"] = base64.b64encode(files["image"][0]).decode("ascii")
    try:
        return model.model_validate(data, strict=False)
    except ValidationError as exc:
        raise invalid(exc) from None


def invalid(exc: ValidationError) -> FactSieveError:
    """A validation error as the API reports it: 400 for a body that is not JSON, else 422
    naming each field."""
    errs = exc.errors(include_url=False, include_context=False)
    if any(e["type"] == "json_invalid" for e in errs):
        return BadInput(f"the body is not valid JSON: {errs[0]['msg']}")
    fields = [{"field": ".".join(str(p) for p in e["loc"]) or "(body)",
               "message": e["msg"].removeprefix("Value error, "), "type": e["type"]}
              for e in errs]
    detail = "; ".join(f"{f['field']}: {f['message']}" for f in fields[:5])
    return InvalidRequest(f"invalid request body: {detail}", errors=fields)


def reply(model: BaseModel, status: int = 200, headers: dict[str, str] | None = None, *,
          exclude_none: bool = False) -> Response:
    resp = Response(model.model_dump_json(exclude_none=exclude_none), status=status, mimetype="application/json")
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
