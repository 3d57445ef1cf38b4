"""The API answers what its OpenAPI document says (issue 21, "Schemathesis again"): a query
parameter an operation does not declare is a 400 naming it, on every operation, before anything
runs; and bodies the schema allows are not refused (nor the reverse)."""
from __future__ import annotations

import re

import pytest

from api.routes import api
from tests.integration.conftest import problem_of

_PARAM = re.compile(r"<(?:[a-z]+:)?\w+>")


def _url(rule: str) -> str:
    return _PARAM.sub("x", rule)


@pytest.fixture(scope="module")
def admin_key(api_services) -> str:
    from plugin.service.keys import Scope

    return api_services.keys.create("conformance admin", Scope.ADMIN)[1]


@pytest.fixture
def keys(admin_key, auth):
    """Each operation's headers: an admin key for the admin routes, the write key elsewhere."""
    from plugin.service.keys import Scope

    return lambda op: {"Authorization": f"Bearer {admin_key}"} if op.scope is Scope.ADMIN else auth


@pytest.mark.parametrize("op", api.operations, ids=lambda op: f"{op.method} {op.rule}")
def test_an_undeclared_query_parameter_is_a_400_naming_it(client, keys, op):
    resp = client.open(_url(op.rule) + "?hostile_unknown=1", method=op.method, headers=keys(op))
    body = problem_of(resp)
    assert resp.status_code == 400, body
    assert "hostile_unknown" in body["detail"]
    assert body["errors"] == [{"field": "hostile_unknown", "message": "unknown query parameter",
                               "type": "query_unknown"}]


@pytest.mark.parametrize("op", [op for op in api.operations if op.body is None and op.raw_body is None],
                         ids=lambda op: f"{op.method} {op.rule}")
@pytest.mark.parametrize("chunked", [False, True])
def test_a_body_sent_to_an_operation_without_one_is_a_400(client, keys, op, chunked):
    """Silently ignored before: ``POST /v1/webhooks/<id>/secret`` with ``{"overlap_s": 0}`` in the
    body answered 200 and kept the old secret valid for 24 hours."""
    headers = {**keys(op), "Content-Type": "application/json"}
    if chunked:
        headers["Transfer-Encoding"] = "chunked"
    resp = client.open(_url(op.rule), method=op.method, headers=headers, data=b'{"overlap_s": 0}')
    body = problem_of(resp)
    assert resp.status_code == 400 and "takes no request body" in body["detail"], body


def test_declared_query_parameters_still_work(client, auth):
    resp = client.get("/v1/webhooks/whk_0000000000000000/deliveries?limit=5", headers=auth)
    assert resp.status_code == 404  # reached the route: the subscription does not exist
    resp = client.post("/v1/fact-checks?async=maybe", headers=auth, json=[{"claim": "c"}])
    assert resp.status_code == 400 and "async" in problem_of(resp)["detail"]


def test_the_query_check_comes_after_authentication(client):
    assert client.get("/v1/webhooks?hostile_unknown=1").status_code == 401


@pytest.mark.parametrize("path,content_type", [
    ("/v1/fact-checks", "text/csv"), ("/v1/fact-checks", "application/x-ndjson"),
    ("/v1/evidence", "application/x-ndjson")])
def test_a_blank_text_body_is_refused_as_its_schema_says(app, client, auth, path, content_type):
    schema = app.extensions["factsieve.openapi"]["paths"][path]["post"]["requestBody"]["content"][content_type]["schema"]
    assert re.search(schema["pattern"], " \n\t") is None  # the schema refuses it ...
    resp = client.post(path, data=b" \n\t", headers={**auth, "Content-Type": content_type})
    assert resp.status_code == 400, problem_of(resp)  # ... and so does the route


def test_verify_accepts_each_configuration_its_schema_lists(app):
    """The route checks ``config`` with ``Services.verification.config`` (a 400 for a name it
    does not know): every name the schema lists must pass that check."""
    listed = app.extensions["factsieve.openapi"]["components"]["schemas"]["VerifyIn"]["properties"]["config"]
    for name in listed["anyOf"][0]["enum"]:
        assert app.extensions["factsieve"].verification.config(name).name == name
