"""Problem responses (RFC 9457, ``application/problem+json``): the only error shape the API has."""
from __future__ import annotations

import json
import logging
import re
from typing import Any

from flask import Response

from plugin.errors import FactSieveError, Unauthorized, problem

__all__ = ["PROBLEM_JSON", "error_response", "problem", "problem_response"]

PROBLEM_JSON = "application/problem+json"
log = logging.getLogger(__name__)


def problem_response(body: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    resp = Response(json.dumps(body, ensure_ascii=False), status=body["status"], mimetype=PROBLEM_JSON)
    for name, value in (headers or {}).items():
        resp.headers[name] = value
    return resp


#: A URL (scheme://…) or host:port in a message: backend addresses stay out of API responses.
_ADDRESS = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s,;)]+|\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b|\blocalhost:\d+\b")


def public_detail(detail: str) -> str:
    """``detail`` with every backend address replaced: a client learns what failed, not where."""
    return _ADDRESS.sub("<backend>", detail)


def error_response(exc: FactSieveError) -> Response:
    headers = {}
    if exc.retry_after is not None:
        headers["Retry-After"] = str(int(exc.retry_after))
    if isinstance(exc, Unauthorized):
        headers["WWW-Authenticate"] = 'Bearer realm="factsieve"'
    body = exc.to_problem()
    if body["status"] >= 500:  # backend failures name addresses; the log keeps them, clients do not
        log.warning("%s: %s", body["title"], body["detail"])
        body["detail"] = public_detail(body["detail"])
    return problem_response(body, headers)
