"""The OpenAPI document: built from the route table, so every route is in it (no servers: the
app builds nothing heavy until a request needs it)."""
import json

import pytest

from api import create_app
from plugin.settings import Settings


@pytest.fixture(scope="module")
def app():
    return create_app(Settings(redis_url="redis://127.0.0.1:9/0", opensearch_url="http://127.0.0.1:9"))


@pytest.fixture(scope="module")
def spec(app):
    return app.extensions["factsieve.openapi"]


def _refs(node):
    if isinstance(node, dict):
        if "$ref" in node:
            yield node["$ref"]
        for v in node.values():
            yield from _refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from _refs(v)


def test_every_route_is_documented(app, spec):
    routed = {(r.rule.replace("<path:", "<").replace("<", "{").replace(">", "}"), m)
              for r in app.url_map.iter_rules() if r.endpoint != "static" and not r.endpoint.startswith("desk.")
              for m in r.methods - {"HEAD", "OPTIONS"}}
    documented = {(p, m.upper()) for p, ops in spec["paths"].items() for m in ops}
    assert routed == documented
    assert len(documented) == 34


def test_every_reference_resolves(spec):
    schemas = spec["components"]["schemas"]
    refs = set(_refs(spec))
    assert refs and all(r.startswith("#/components/schemas/") for r in refs)
    assert {r.rsplit("/", 1)[1] for r in refs} <= set(schemas)
    json.dumps(spec)  # serialisable


def test_security_and_error_responses(spec):
    public = {"/healthz", "/readyz", "/openapi.json"}
    #: the tipline platforms' webhooks: authenticated by the channel's secret token or signature
    channels = {"/v1/channels/telegram/{channel_id}", "/v1/channels/whatsapp/{channel_id}"}
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            if path in public:
                assert op["security"] == []
                continue
            if path in channels:
                assert op["security"] == [] and "401" in op["responses"], (path, method)
                continue
            assert op["security"] == [{"bearer": []}], (path, method)
            assert {"401", "403", "429", "500", "503"} <= set(op["responses"]), (path, method)
            for code, resp in op["responses"].items():
                if code >= "400":
                    assert list(resp["content"]) == ["application/problem+json"]
            if "requestBody" in op:
                assert {"400", "413", "415", "422"} <= set(op["responses"]), (path, method)
    assert spec["paths"]["/v1/webhooks"]["post"]["x-factsieve-scope"] == "write"
    assert spec["paths"]["/v1/match"]["post"]["x-factsieve-scope"] == "read"
    assert set(spec["paths"]["/v1/fact-checks"]["post"]["responses"]) >= {"200", "202"}


def test_request_models_forbid_unknown_fields(spec):
    schemas = spec["components"]["schemas"]
    for name in ("MatchIn", "PostIn", "VerifyIn", "RerankIn", "WebhookIn", "DecisionIn"):
        assert schemas[name]["additionalProperties"] is False, name
    assert schemas["MatchIn"]["properties"]["k"]["maximum"] == 100


def test_secret_rotation_documents_its_overlap(spec):
    from plugin.service.signing import MAX_SECRET_OVERLAP_S, SECRET_OVERLAP_S

    op = spec["paths"]["/v1/webhooks/{webhook_id}/secret"]["post"]
    (param,) = [p for p in op["parameters"] if p["name"] == "overlap_s"]
    assert param["in"] == "query" and not param["required"]
    assert param["schema"] == {"type": "integer", "minimum": 0, "maximum": MAX_SECRET_OVERLAP_S,
                               "default": SECRET_OVERLAP_S}
    assert "400" in op["responses"]  # an overlap out of range


def test_every_operation_documents_the_400_for_an_undeclared_query_parameter(spec):
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            assert "400" in op["responses"], (path, method)


def test_config_fields_list_the_configurations_each_route_reads(spec):
    from plugin.search.retrieval import load_configs
    from plugin.verify.config import load_configs as load_verification_configs

    schemas = spec["components"]["schemas"]

    def names(model):
        return schemas[model]["properties"]["config"]["anyOf"][0]["enum"]

    assert names("MatchIn") == names("RerankIn") == sorted(load_configs())
    # verification names, not retrieval names: those made schema-valid bodies a 400
    assert names("VerifyIn") == sorted(load_verification_configs())
    assert "qa-loop" in names("VerifyIn")


def test_upload_content_types_are_the_ones_the_routes_read(spec):
    from plugin.ingest import Format, preflight

    ingest = spec["paths"]["/v1/fact-checks"]["post"]["requestBody"]["content"]
    assert set(ingest) == set(preflight.CONTENT_TYPES) and "text/csv" in ingest
    evidence = spec["paths"]["/v1/evidence"]["post"]["requestBody"]["content"]
    assert set(evidence) == {m for m, f in preflight.CONTENT_TYPES.items() if f is Format.jsonl}
    # a blank text body is a 400 (decode_body; evidence: "no documents"): the schema says so
    for content in (ingest["text/csv"], ingest["application/x-ndjson"], evidence["application/x-ndjson"]):
        assert content["schema"]["minLength"] == 1 and content["schema"]["pattern"] == r"\S"


def _keys(node):
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from _keys(value)
    elif isinstance(node, list):
        for item in node:
            yield from _keys(item)


def test_bounds_are_written_as_json_schema_keywords(spec):
    """``Int | None`` with ``Field(ge=…)`` once came out as "ge"/"le", which no JSON Schema reader
    knows: schemathesis sent ``within_days: -1`` as schema-valid and got a 422."""
    schemas = spec["components"]["schemas"]
    for name, schema in schemas.items():
        assert not {"ge", "le", "gt", "lt"} & set(_keys(schema)), name
    within = schemas["MatchIn"]["properties"]["within_days"]["anyOf"][0]
    assert (within["minimum"], within["maximum"]) == (0, 36500)


@pytest.mark.parametrize("value", ["p-1", "a\x1fp-1", " ", "x y", "\x85", "\x7f", "é", "\t p"])
def test_id_and_url_patterns_say_what_the_validator_enforces(spec, value):
    """The control-character rule (``no_control_chars``) is declared in the schema, so a client
    that follows the schema is never refused by it."""
    import re

    from pydantic import ValidationError

    from api.schemas import PostIn

    props = spec["components"]["schemas"]["PostIn"]["properties"]
    schema_ok = re.search(props["id"]["pattern"], value) is not None
    try:
        PostIn.model_validate_json(json.dumps({"id": value, "text": "t"}))
        model_ok = True
    except ValidationError:
        model_ok = False
    assert schema_ok == model_ok, value
    url = "http://example.org/" + value
    url_ok = re.search(props["url"]["anyOf"][0]["pattern"], url) is not None
    try:
        PostIn.model_validate_json(json.dumps({"id": "p", "text": "t", "url": url}))
        model_ok = True
    except ValidationError:
        model_ok = False
    assert url_ok == model_ok, url


@pytest.mark.parametrize("value", ["fc-1", "a\x1fb", "x\x00y", "x\ny", "\x85", "é"])
def test_fact_check_id_and_url_patterns_say_what_ingestion_enforces(spec, value):
    """A fact-check whose id or url holds a control character is rejected at ingestion; the
    upload schema says so (schemathesis found schema-valid records refused)."""
    import re

    from pydantic import ValidationError

    from plugin.models import FactCheck

    props = spec["components"]["schemas"]["FactCheckItem"]["properties"]
    for field, sent in (("id", value), ("url", "https://example.org/" + value)):
        schema_ok = re.search(props[field]["anyOf"][0]["pattern"], sent) is not None
        try:
            FactCheck.model_validate({"claim": "a claim", field: sent})
            model_ok = True
        except ValidationError:
            model_ok = False
        assert model_ok or not schema_ok, (field, sent)  # nothing schema-valid is refused
