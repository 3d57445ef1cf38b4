"""What ``Store`` puts of an OpenSearch error answer into its messages (``_reason``, pure): the
error's type and root cause, never the raw body nor the physical index it names."""
from __future__ import annotations

import json

import pytest
from opensearchpy import exceptions as osx

from plugin.index.store import _reason

MISSING_DOC = {"_index": "fs-x-v1", "_id": "nope", "found": False}
MISSING_DELETE = {"_index": "fs-x-v1", "_id": "nope", "_version": 1, "result": "not_found",
                  "_shards": {"total": 1}, "_seq_no": 3, "_primary_term": 1}
BAD_QUERY = {"error": {"root_cause": [{"type": "parsing_exception", "reason": "unknown query [x]"}],
                       "type": "parsing_exception", "reason": "unknown query [x]"}, "status": 400}


@pytest.mark.parametrize("status, error, info, reason", [
    (404, json.dumps(MISSING_DOC), MISSING_DOC, "not found"),
    (404, json.dumps(MISSING_DELETE), MISSING_DELETE, "not found"),
    (400, "parsing_exception", BAD_QUERY, "parsing_exception: unknown query [x]"),
    (403, "no permissions", {"error": "no permissions for [indices:data/read/get]"},
     "no permissions for [indices:data/read/get]"),
    (502, "<html><body>Bad gateway</body></html>\n<p>nginx</p>", None,
     "<html><body>Bad gateway</body></html>"),
    (500, json.dumps({"weird": "answer", "_index": "fs-x-v1"}), None, "HTTP 500"),  # JSON as text
    (500, "", {"acknowledged": False}, "HTTP 500"),
])
def test_reason_is_never_the_raw_body(status, error, info, reason):
    assert _reason(osx.TransportError(status, error, info)) == reason
