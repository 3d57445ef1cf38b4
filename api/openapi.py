"""A small route registry that is also the OpenAPI document.

Every route is declared once with ``Api.route`` (method, path, scope, body and response models,
query parameters); the decorator registers the Flask view *and* the operation, so
``/openapi.json`` covers every route by construction, with schemas from the pydantic models.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from plugin.service.keys import Scope

from api.schemas import Problem

_STATUS_TEXT = {200: "OK", 201: "Created", 202: "Accepted", 204: "No content",
                207: "Partly recorded: some of the batch was not (listed)", 400: "Bad request",
                401: "Missing or unknown API key", 403: "The key's scope does not allow this",
                404: "Not found", 409: "Conflict", 413: "Body too large",
                415: "Unsupported media type", 422: "Invalid request", 429: "Rate limited",
                500: "Internal error", 502: "Backend error", 503: "Backend unavailable"}
_PARAM = re.compile(r"<(?:[a-z]+:)?(\w+)>")


@dataclass
class Operation:
    method: str
    rule: str
    endpoint: str
    summary: str
    scope: Scope | None
    status: int
    response: type[BaseModel] | None
    body: type[BaseModel] | None = None
    #: a hand-written requestBody (content types the models cannot express)
    raw_body: dict[str, Any] | None = None
    query: list[dict[str, Any]] = field(default_factory=list)
    errors: tuple[int, ...] = ()
    #: other success statuses and their models (e.g. 202 when a body becomes a job)
    also: dict[int, type[BaseModel]] = field(default_factory=dict)
    tag: str = ""
    description: str = ""
    #: the JSON body may also come as ``multipart/form-data`` with an ``image`` file part
    multipart: bool = False

    @property
    def path(self) -> str:
        return _PARAM.sub(r"{\1}", self.rule)

    def error_codes(self) -> list[int]:
        codes = {500, *self.errors}
        if self.scope is not None:
            codes |= {401, 403, 429, 503}
        if self.body is not None or self.raw_body is not None:
            codes |= {400, 413, 415, 422}
        if _PARAM.search(self.rule):
            codes.add(404)
        codes.add(400)  # a query parameter the operation does not declare (or refuses), a bad id
        return sorted(codes)


class Api:
    def __init__(self) -> None:
        self.operations: list[Operation] = []

    def add(self, op: Operation) -> None:
        self.operations.append(op)

    def spec(self, *, title: str, version: str, description: str = "") -> dict[str, Any]:
        models: set[type[BaseModel]] = {Problem}
        for op in self.operations:
            models.update(m for m in (op.body, op.response, *op.also.values()) if m is not None)
            models.update(_placeholders(op.raw_body))
        refs, defs = models_json_schema(
            [(m, "validation") for m in sorted(models, key=lambda m: m.__name__)],
            ref_template="#/components/schemas/{model}")
        ref = {m: refs[(m, "validation")] for m in models}
        paths: dict[str, dict[str, Any]] = {}
        for op in self.operations:
            paths.setdefault(op.path, {})[op.method.lower()] = _operation(op, ref)
        return {
            "openapi": "3.1.0",
            "info": {"title": title, "version": version, "description": description},
            "paths": paths,
            "components": {
                "schemas": defs.get("$defs", {}),
                "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                               "description": "`factsieve keys create --name NAME`"}},
            },
        }


def _placeholders(obj: Any) -> set[type[BaseModel]]:
    """Models named by ``{"$model": Model}`` placeholders in a hand-written body."""
    if isinstance(obj, dict):
        if set(obj) == {"$model"}:
            return {obj["$model"]}
        return set().union(*(_placeholders(v) for v in obj.values()))
    if isinstance(obj, list):
        return set().union(*(_placeholders(v) for v in obj))
    return set()


def _resolve(obj: Any, ref: dict[type[BaseModel], Any]) -> Any:
    if isinstance(obj, dict):
        if set(obj) == {"$model"}:
            return ref[obj["$model"]]
        return {k: _resolve(v, ref) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_resolve(v, ref) for v in obj]
    return obj


def _problem(code: int, ref: dict[type[BaseModel], Any]) -> dict[str, Any]:
    return {"description": _STATUS_TEXT.get(code, "Error"),
            "content": {"application/problem+json": {"schema": ref[Problem]}}}


def _multipart(model: type[BaseModel]) -> dict[str, Any]:
    """The form of a route that takes an image: the ``image`` file part, and the JSON body's
    other fields as form fields (a list field repeated)."""
    props: dict[str, Any] = {"image": {"type": "string", "format": "binary",
                                       "description": "the image file (JPEG, PNG, WebP, GIF or BMP)"}}
    for name, field in model.model_fields.items():
        if name == "image":
            continue
        listed = "list[" in str(field.annotation)
        props[name] = ({"type": "array", "items": {"type": "string"}} if listed else {"type": "string"})
        if field.description:
            props[name]["description"] = field.description
    return {"schema": {"type": "object", "properties": props},
            "encoding": {"image": {"contentType": "image/jpeg, image/png, image/webp, image/gif, image/bmp"}}}


def _operation(op: Operation, ref: dict[type[BaseModel], Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"operationId": op.endpoint, "summary": op.summary, "tags": [op.tag]}
    if op.description:
        out["description"] = op.description
    out["security"] = [] if op.scope is None else [{"bearer": []}]
    if op.scope is not None:
        out["x-factsieve-scope"] = op.scope.value
    params = [{"name": name, "in": "path", "required": True,
               "schema": {"type": "string", "minLength": 1, "maxLength": 512}}
              for name in _PARAM.findall(op.rule)]
    params += op.query
    if params:
        out["parameters"] = params
    if op.body is not None:
        out["requestBody"] = {"required": True,
                              "content": {"application/json": {"schema": ref[op.body]}}}
        if op.multipart:
            out["requestBody"]["content"]["multipart/form-data"] = _multipart(op.body)
    elif op.raw_body is not None:
        out["requestBody"] = _resolve(op.raw_body, ref)
    responses: dict[str, Any] = {}
    if op.response is None:
        responses[str(op.status)] = {"description": _STATUS_TEXT.get(op.status, "OK")}
    else:
        responses[str(op.status)] = {"description": _STATUS_TEXT.get(op.status, "OK"),
                                     "content": {"application/json": {"schema": ref[op.response]}}}
    for code, model in op.also.items():
        responses[str(code)] = {"description": _STATUS_TEXT.get(code, "OK"),
                                "content": {"application/json": {"schema": ref[model]}}}
    for code in op.error_codes():
        responses[str(code)] = _problem(code, ref)
    out["responses"] = responses
    return out

