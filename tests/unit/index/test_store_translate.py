"""Which OpenSearch failures are the client's input, and what of them a client may read
(``plugin.index.translate``, pure; issue 35, item 6)."""
from __future__ import annotations

import pytest
from opensearchpy import exceptions as osx

from plugin.index.translate import failure_kind, root_causes


def _err(status: int, kind: str, *roots: str) -> osx.TransportError:
    return osx.TransportError(status, kind, {"error": {
        "type": kind, "reason": "all shards failed",
        "root_cause": [{"type": r, "reason": f"[review-v1] java.lang.Long {r}"} for r in roots],
        "failed_shards": [{"index": "review-v1"}]}, "status": status})


@pytest.mark.parametrize(("exc", "kind"), [
    (_err(400, "search_phase_execution_exception", "parse_exception"), "input"),
    (_err(400, "search_phase_execution_exception", "illegal_argument_exception"), "input"),
    (_err(500, "search_phase_execution_exception", "null_pointer_exception"), "failed"),
    (_err(500, "search_phase_execution_exception", "parse_exception", "null_pointer_exception"), "failed"),
    (_err(503, "search_phase_execution_exception", "circuit_breaking_exception"), None),
    (_err(503, "search_phase_execution_exception"), None),
    (_err(400, "parsing_exception", "parsing_exception"), None),  # the status decides: a 400
    (_err(500, "exception", "exception"), None),
    (osx.TransportError(502, "<html>bad gateway</html>", "<html>"), None),
])
def test_failure_kind_reads_root_causes_not_the_status(exc, kind):
    assert failure_kind(exc) == kind


def test_root_causes_name_types_only_never_indexes_or_java():
    text = root_causes(_err(500, "search_phase_execution_exception", "null_pointer_exception", "parse_exception"))
    assert text == "null_pointer_exception, parse_exception"
    assert "review-v1" not in text and "java" not in text
