"""The FactSieve HTTP API: ``create_app(settings)`` builds a Flask app around one ``Services``.

Errors have one shape, ``application/problem+json``, produced here in one place: FactSieve's own
errors carry their status (and ``Retry-After``), werkzeug's HTTP errors (404, 405, 413 …) are
converted, and anything unexpected is logged and answered with a bare 500, never a traceback
or an HTML page.
"""
from __future__ import annotations

import logging
from typing import Any

from flask import Flask, Response, g
from werkzeug.exceptions import HTTPException

from plugin.errors import FactSieveError
from plugin.service.services import Services
from plugin.settings import Settings

from api.problems import error_response, problem, problem_response, rate_limit_headers

log = logging.getLogger("factsieve.api")


def create_app(settings: Settings | None = None, *, services: Services | None = None,
               celery: Any = None) -> Flask:
    from workers.app import create_celery

    from api.desk import desk
    from api.routes import api, bp

    settings = settings or Settings()
    services = services or Services(settings)
    app = Flask("api")
    app.config["MAX_CONTENT_LENGTH"] = settings.max_request_bytes
    app.extensions["factsieve"] = services
    app.extensions["factsieve.celery"] = celery or create_celery(settings, services)
    spec = api.spec(title="FactSieve API", version=_version(),
                    description="Claim matching against previously published fact-checks, "
                                "verification jobs and signed webhooks. Errors are "
                                "application/problem+json.")
    app.extensions["factsieve.openapi"] = document_config_names(spec)
    app.register_blueprint(bp)
    app.register_blueprint(desk)  # the review page at /desk (not part of the JSON API's spec)
    app.register_error_handler(FactSieveError, error_response)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected)
    app.after_request(_rate_limit_headers)
    return app


def document_config_names(spec: dict[str, Any]) -> dict[str, Any]:
    """The ``config`` fields accept the deployment's named configurations: say which. Matching
    and reranking name a retrieval configuration, verification a verification configuration
    (listing retrieval names there made schema-valid requests a 400)."""
    from plugin.search.retrieval import load_configs
    from plugin.verify.config import load_configs as load_verification_configs

    retrieval, verification = sorted(load_configs()), sorted(load_verification_configs())
    for model, names in (("MatchIn", retrieval), ("RerankIn", retrieval), ("VerifyIn", verification)):
        prop = spec["components"]["schemas"][model]["properties"]["config"]
        prop["anyOf"] = [{"type": "string", "enum": names}, {"type": "null"}]
    return spec


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("factsieve")
    except PackageNotFoundError:
        return "0"


def _http_error(exc: HTTPException) -> Response:
    code = exc.code or 500
    headers = {}
    if code == 405:
        allow = dict(exc.get_headers()).get("Allow")
        if allow:
            headers["Allow"] = allow
    return problem_response(problem(code, exc.name, exc.description or exc.name), headers)


def _unexpected(exc: Exception) -> Response:
    log.exception("unhandled error")
    return problem_response(problem(500, "Internal error",
                                    "the request failed unexpectedly; the server log has details"))


def _rate_limit_headers(resp: Response) -> Response:
    """The key's rate-limit headers on every answer to an authenticated request, except a 429,
    which already carries those of the limit it hit (``api.problems.error_response``)."""
    rate = g.get("rate_limit")
    if rate is not None and "RateLimit-Limit" not in resp.headers:
        resp.headers.update(rate_limit_headers(*rate))
    return resp
