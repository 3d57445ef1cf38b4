"""The LLM client's pure parts: JSON extraction, schema inlining, the request's response_format,
the errors it raises before any network call. No server."""
from __future__ import annotations

import enum

import pytest
from pydantic import BaseModel, Field

from plugin.errors import BackendUnavailable, LLMNotConfigured, LLMUnavailable
from plugin.llm import LLMClient, extract_json, inline_refs, json_schema_format, parse_reply
from plugin.settings import Settings


@pytest.mark.parametrize(("text", "expected"), [
    ('{"a": 1}', {"a": 1}),
    ('  {"a": 1}\n', {"a": 1}),
    ('```json\n{"a": 1}\n```', {"a": 1}),
    ('```JSON\n{"a": 1}```', {"a": 1}),
    ('```\n[1, 2]\n```', [1, 2]),
    ('Here is the verdict:\n```json\n{"a": "x"}\n```\nHope it helps.', {"a": "x"}),
    ('Sure! {"a": {"b": [1]}} trailing words', {"a": {"b": [1]}}),
    ('<think>maybe {"a": 0}?</think>\n{"a": 2}', {"a": 2}),
    ('Use {braces} like this: {"a": 3}', {"a": 3}),
    ('"just a string"', "just a string"),
])
def test_extract_json(text, expected):
    assert extract_json(text) == expected


@pytest.mark.parametrize("text", [
    "", "no json here", '{"verdict": "not enou', "```json\n{\"a\": \n```", "{'a': 1}",
])
def test_extract_json_rejects(text):
    with pytest.raises(ValueError):
        extract_json(text)


class Label(str, enum.Enum):
    supported = "supported"
    refuted = "refuted"


class Evidence(BaseModel):
    url: str
    quote: str = Field(max_length=80)


class Verdict(BaseModel):
    label: Label
    evidence: list[Evidence] = Field(max_length=2)
    best: Evidence | None = Field(default=None, description="the strongest")


def test_inline_refs_replaces_every_ref_and_drops_defs():
    schema = Verdict.model_json_schema()
    assert "$defs" in schema  # what pydantic produces; the servers' converters may not follow it
    inlined = inline_refs(schema)
    assert "$defs" not in inlined and "$ref" not in repr(inlined)
    props = inlined["properties"]
    assert props["label"] == {"enum": ["supported", "refuted"], "title": "Label", "type": "string"}
    assert props["evidence"]["maxItems"] == 2
    assert props["evidence"]["items"]["properties"]["quote"]["maxLength"] == 80
    assert props["evidence"]["items"]["required"] == ["url", "quote"]
    # a $ref inside anyOf, with sibling keys kept beside the inlined definition
    assert props["best"]["anyOf"][0]["title"] == "Evidence"
    assert props["best"]["anyOf"][1] == {"type": "null"}
    assert props["best"]["description"] == "the strongest"
    assert schema["properties"]["label"] == {"$ref": "#/$defs/Label"}  # input left untouched


@pytest.mark.parametrize(("schema", "expected"), [
    ({"type": "string"}, {"type": "string"}),
    ({"$defs": {"A": {"type": "integer"}}, "$ref": "#/$defs/A", "description": "d"},
     {"type": "integer", "description": "d"}),
    ({"$defs": {"A": {"type": "array", "items": {"$ref": "#/$defs/B"}}, "B": {"enum": [1, 2]}},
      "properties": {"x": {"$ref": "#/$defs/A"}}},
     {"properties": {"x": {"type": "array", "items": {"enum": [1, 2]}}}}),
])
def test_inline_refs_table(schema, expected):
    assert inline_refs(schema) == expected


def test_inline_refs_leaves_recursive_models_alone():
    class Node(BaseModel):
        children: list[Node] = []

    schema = Node.model_json_schema()
    assert inline_refs(schema) == schema


def test_inline_refs_rejects_remote_refs():
    with pytest.raises(ValueError, match="only local"):
        inline_refs({"$ref": "https://example.com/schema.json"})


def test_json_schema_format():
    fmt = json_schema_format(Verdict)
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Verdict"
    assert fmt["json_schema"]["schema"] == inline_refs(Verdict.model_json_schema())


def test_parse_reply_validates():
    good = '```json\n{"label": "refuted", "evidence": [{"url": "u", "quote": "q"}]}\n```'
    assert parse_reply(good, Verdict).label is Label.refuted
    with pytest.raises(ValueError):  # pydantic's ValidationError is a ValueError
        parse_reply('{"label": "maybe", "evidence": []}', Verdict)


def test_not_configured_names_the_settings():
    client = LLMClient(Settings(llm_url=None))
    with pytest.raises(LLMNotConfigured, match="FACTSIEVE_LLM_URL") as err:
        client.chat([{"role": "user", "content": "hi"}])
    assert isinstance(err.value, LLMUnavailable) and isinstance(err.value, BackendUnavailable)
    assert err.value.status == 503 and err.value.retry_after is None
    assert "FACTSIEVE_LLM_MODEL" in str(err.value)


def test_key_is_sent_only_when_set_and_never_shown():
    keyless = LLMClient(Settings(llm_url="http://x/v1", llm_api_key=None))
    assert "Authorization" not in keyless.session.headers
    client = LLMClient(Settings(llm_url="http://x/v1/", llm_api_key="sk-secret"))
    assert client.session.headers["Authorization"] == "Bearer sk-secret"
    assert client.url == "http://x/v1"
    assert "sk-secret" not in repr(client)


def test_credentials_in_the_url_are_sent_as_basic_auth_and_never_shown():
    import requests

    client = LLMClient(Settings(llm_url="http://user:s%40cret@llm.internal:8089/v1/?x=1"))
    assert client.url == "http://llm.internal:8089/v1/?x=1"  # what requests go to: no credentials
    assert client.shown_url == "http://llm.internal:8089/v1/"  # what messages name: no query either
    assert "cret" not in repr(client)
    sent = client.session.prepare_request(requests.Request("POST", f"{client.url}/chat/completions"))
    assert sent.headers["Authorization"] == requests.auth._basic_auth_str("user", "s@cret")


def test_an_unreachable_llm_never_names_the_credentials(caplog):
    import logging

    client = LLMClient(Settings(llm_url="http://user:secret@127.0.0.1:9/v1", llm_timeout_s=2))
    with caplog.at_level(logging.DEBUG), pytest.raises(LLMUnavailable) as err:
        client.chat([{"role": "user", "content": "hi"}])
    assert "http://127.0.0.1:9/v1/chat/completions" in str(err.value)  # the operator's clue
    assert "secret" not in str(err.value) and "user:" not in str(err.value)
    assert "secret" not in caplog.text
