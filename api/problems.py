"""Problem responses (RFC 9457, ``application/problem+json``): the only error shape the API has."""
from __future__ import annotations

import json
import logging
from typing import Any

from flask import Response

from plugin.errors import FactSieveError, RateLimited, Unauthorized, problem, public_problem

__all__ = ["PROBLEM_JSON", "error_response", "problem", "problem_response", "rate_limit_headers"]

PROBLEM_JSON = "application/problem+json"
log = logging.getLogger(__name__)


def problem_response(body: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    resp = Response(json.dumps(body, ensure_ascii=False), status=body["status"], mimetype=PROBLEM_JSON)
    for name, value in (headers or {}).items():
        resp.headers[name] = value
    return resp


def rate_limit_headers(limit: int | None, remaining: int, reset: int | None) -> dict[str, str]:
    """The ``RateLimit-*`` headers (IETF httpapi draft) of one limit (pure); every 429 carries
    them with ``Remaining: 0``, every authenticated answer with the key's own numbers."""
    out = {"RateLimit-Remaining": str(max(0, remaining))}
    if limit is not None:
        out["RateLimit-Limit"] = str(limit)
    if reset is not None:
        out["RateLimit-Reset"] = str(int(reset))
    return out


def error_response(exc: FactSieveError) -> Response:
    headers = {}
    if exc.retry_after is not None:
        headers["Retry-After"] = str(int(exc.retry_after))
    if isinstance(exc, Unauthorized):
        headers["WWW-Authenticate"] = 'Bearer realm="factsieve"'
    if isinstance(exc, RateLimited):
        headers.update(rate_limit_headers(exc.limit, 0, exc.retry_after))
    body = exc.to_problem()
    if body["status"] >= 500:  # backend failures name addresses; the log keeps them, clients do not
        log.warning("%s: %s", body["title"], body["detail"])
    return problem_response(public_problem(body), headers)
