"""Problem responses (RFC 9457, ``application/problem+json``): the only error shape the API has."""
from __future__ import annotations

import json
import logging
from typing import Any

from flask import Response

from plugin.errors import FactSieveError, Unauthorized, problem, public_problem

__all__ = ["PROBLEM_JSON", "error_response", "problem", "problem_response"]

PROBLEM_JSON = "application/problem+json"
log = logging.getLogger(__name__)


def problem_response(body: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    resp = Response(json.dumps(body, ensure_ascii=False), status=body["status"], mimetype=PROBLEM_JSON)
    for name, value in (headers or {}).items():
        resp.headers[name] = value
    return resp


def error_response(exc: FactSieveError) -> Response:
    headers = {}
    if exc.retry_after is not None:
        headers["Retry-After"] = str(int(exc.retry_after))
    if isinstance(exc, Unauthorized):
        headers["WWW-Authenticate"] = 'Bearer realm="factsieve"'
    body = exc.to_problem()
    if body["status"] >= 500:  # backend failures name addresses; the log keeps them, clients do not
        log.warning("%s: %s", body["title"], body["detail"])
    return problem_response(public_problem(body), headers)
