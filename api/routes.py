"""The API's routes, declared once each with ``api.routing.route``: health and matching here,
the other areas in their own modules (fact-checks, posts and jobs, webhooks), imported at the end
so that the OpenAPI document lists the operations in this order.
"""
from __future__ import annotations

import json

from flask import Response, current_app, g

from plugin.errors import FactSieveError
from plugin.search.request import MatchRequest

from api import schemas as s
from api.problems import problem, problem_response
from api.routing import api, bp, reply, route, services  # noqa: F401 (api, bp: what create_app registers)


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
       tag="match", body=s.MatchIn, response=s.MatchOut, errors=(404, 409, 502), images=True,
       description="Hybrid BM25 + kNN retrieval fused with weighted RRF. No LLM runs; a "
                   "cross-encoder runs only with `rerank` and a configuration that has one. "
                   "A post may come with an image (`image` in base64 or `image_url`, or as "
                   "multipart/form-data with an `image` file part), with or without `text`: "
                   "the text read from it is matched too, and fact-checks with the same image "
                   "come first; each match lists its `signals`. Reading the image's text stops at "
                   "FACTSIEVE_OCR_API_BUDGET_S: the match then goes on with a note.")
def match(body: s.MatchIn) -> Response:
    from plugin.image.inputs import analyse_input
    from plugin.service.matching import match_post

    svc = services()
    image = analyse_input(body.model_dump(), svc.settings, ocr_budget_s=svc.settings.ocr_api_budget_s)
    post = body.post()
    found = match_post(svc.matching, MatchRequest.from_mapping(post, image=image), g.api_key.tenant,
                       config=body.config, post=post)
    return reply(s.MatchOut.model_validate(found.to_dict()))


# the other areas, after these (their order is the OpenAPI document's)
from api import routes_channels, routes_claims, routes_factchecks, routes_jobs, routes_review, routes_webhooks  # noqa: E402,F401
