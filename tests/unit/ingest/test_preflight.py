"""Ingest preflight: every refusal before a body is read for real, with its status and message."""
from __future__ import annotations

import pytest

from plugin.errors import BadInput, InvalidRequest
from plugin.ingest import Format, IngestReport
from plugin.ingest.preflight import (UnsupportedContentType, check_any_valid, check_report,
                                     check_shape, decode_body, format_for, preflight)


# --------------------------------------------------------------------------- format_for

@pytest.mark.parametrize(("content_type", "param", "expected"), [
    ("application/json", None, Format.auto),
    ("application/ld+json", None, Format.claimreview),
    ("application/x-ndjson", None, Format.jsonl),
    ("application/jsonl", None, Format.jsonl),
    ("application/jsonlines", None, Format.jsonl),
    ("text/csv", None, Format.csv),
    ("Text/CSV; charset=utf-8", None, Format.csv),
    ("application/json", "csv", Format.csv),          # ?format= overrides the content type
    ("image/png", "multiclaim", Format.multiclaim),
    (None, "jsonl", Format.jsonl),
    ("application/json", "", Format.auto),            # an empty ?format= is no override
])
def test_format_for(content_type, param, expected):
    assert format_for(content_type, param) is expected


@pytest.mark.parametrize(("content_type", "named"), [
    ("image/png", "'image/png'"), (None, "'no content type'"), ("", "'no content type'")])
def test_unsupported_content_type_is_415(content_type, named):
    with pytest.raises(UnsupportedContentType) as err:
        format_for(content_type, None)
    assert err.value.status == 415 and isinstance(err.value, BadInput)
    assert named in str(err.value) and "application/x-ndjson" in str(err.value)


def test_unknown_format_param_is_400():
    with pytest.raises(BadInput, match="valid formats") as err:
        format_for("application/json", "yaml")
    assert err.value.status == 400


# --------------------------------------------------------------------------- decode_body

def test_decode_body():
    assert decode_body(b'\xef\xbb\xbf[{"claim": "x"}]') == '[{"claim": "x"}]'
    with pytest.raises(BadInput, match="the body is empty"):
        decode_body(b"  \n")
    with pytest.raises(BadInput, match=r"not UTF-8 text \(byte 0\)") as err:
        decode_body(b"\xff\xfe\x00garbage")
    assert err.value.status == 400


# --------------------------------------------------------------------------- check_shape
# (text, format, None when it passes or (error class, message substring))

SHAPES = [
    ('[{"claim": "x"}]', Format.auto, None),
    ('{"claim": "x"}', Format.json, None),
    ('{"claim": "x"}\n{"claim": "y"}\n', Format.auto, None),   # JSON Lines as application/json
    ('"a string"', Format.auto, (InvalidRequest, "not a JSON str")),
    ("-5.5e16", Format.claimreview, (InvalidRequest, "not a JSON float")),
    ("{oops", Format.claimreview, (BadInput, "not valid JSON (read as claimreview)")),
    ("{oops", Format.auto, (InvalidRequest, "JSON Lines body must have one JSON object")),
    ("[1, 2]\n", Format.jsonl, (InvalidRequest, "the first is not one")),
    ("\n\n{\"claim\": \"x\"}\n[1]\n", Format.jsonl, None),        # only the first line is judged
    ("[" * 100_000, Format.json, (BadInput, "not valid JSON")),    # too deep is not a crash
    ("[" * 100_000, Format.auto, (InvalidRequest, "the first is not one")),
    ("\x00", Format.csv, None),
    ("anything", Format.multiclaim, None),
]


@pytest.mark.parametrize(("text", "fmt", "refusal"), SHAPES)
def test_check_shape(text, fmt, refusal):
    if refusal is None:
        check_shape(text, fmt)
        return
    cls, message = refusal
    with pytest.raises(cls) as err:
        check_shape(text, fmt)
    assert type(err.value) is cls and message in str(err.value)


# --------------------------------------------------------------------------- check_any_valid

@pytest.mark.parametrize(("body", "fmt"), [
    (b'[{"claim": ""}, {"claim": "ok"}]', Format.auto),
    (b'{"claim": "x"}\n', Format.jsonl),
    (b"claim\nhello\n", Format.csv),
])
def test_any_valid_passes(body, fmt):
    check_any_valid(body, fmt)


def test_no_record_at_all_is_422():
    with pytest.raises(InvalidRequest, match=r"holds no fact-check records \(read as auto\)") as err:
        check_any_valid(b"[]", Format.auto)
    assert err.value.status == 422 and err.value.errors == []
    with pytest.raises(InvalidRequest, match="read as csv"):
        check_any_valid(b"\x00", Format.csv)


def test_only_rejects_is_422_listing_them():
    with pytest.raises(InvalidRequest) as err:
        check_any_valid(b'[{"claim": ""}, {"claimReviewed": false}, 3]', Format.auto)
    assert str(err.value) == "no fact-check in the body is valid (3 rejected)"
    assert [e["field"] for e in err.value.errors] == ["body:1", "body:2", "body:3"]
    assert all(e["type"] == "record" and e["message"] for e in err.value.errors)
    assert "expected a JSON object, got a number" in err.value.errors[2]["message"]


def test_check_report():
    check_report(IngestReport(indexed=1, rejected=5), Format.auto)
    check_report(IngestReport(updated=1), Format.auto)
    with pytest.raises(InvalidRequest, match=r"holds no fact-check records \(read as jsonl\)"):
        check_report(IngestReport(), Format.jsonl)
    report = IngestReport()
    report.reject("body:2", "claim: required")
    with pytest.raises(InvalidRequest) as err:
        check_report(report, Format.jsonl)
    assert str(err.value) == "no fact-check in the body was accepted (1 rejected)"
    assert err.value.errors == [{"field": "body:2", "message": "claim: required", "type": "record"}]


# --------------------------------------------------------------------------- preflight

def test_preflight_returns_the_text_and_checks_records_only_when_deep():
    body = b'\xef\xbb\xbf[{"claim": ""}]'
    assert preflight(body, Format.auto, deep=False) == '[{"claim": ""}]'
    with pytest.raises(InvalidRequest, match="is valid"):
        preflight(body, Format.auto, deep=True)
    with pytest.raises(BadInput, match="empty"):
        preflight(b"", Format.auto, deep=True)
    with pytest.raises(InvalidRequest, match="not a JSON int"):
        preflight(b"5", Format.json, deep=False)
