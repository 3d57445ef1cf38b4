"""Which OpenSearch failures are the client's input, what of them a client may read (issue 35,
item 6), and the one table that translates whole answers and msearch/mget items alike
(``plugin.index.translate``, pure; issue 36)."""
from __future__ import annotations

import pytest
from opensearchpy import exceptions as osx

from plugin.errors import BackendBusy, BackendError, BackendUnavailable, BadInput, NotFound
from plugin.index.store import Store
from plugin.index.translate import failure_kind, item_error, root_causes, translate
from plugin.settings import Settings


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


# -- the one table: whole answers and msearch/mget items alike (issue 36, item 5) ----------------

BUSY = {"type": "rejected_execution_exception", "reason": "search queue is full"}
MISSING = {"type": "index_not_found_exception", "reason": "no such index [fs-x]", "index": "fs-x"}


@pytest.mark.parametrize(("status", "error", "cls", "http"), [
    (400, {"type": "parsing_exception", "reason": "unknown query [x]"}, BadInput, 400),
    (401, {"type": "security_exception", "reason": "unauthenticated"}, BackendError, 502),
    (403, {"type": "security_exception", "reason": "no permissions for [x] and User [name=u]"}, BackendError, 502),
    (404, {"type": "resource_not_found_exception", "reason": "gone"}, NotFound, 404),
    (404, MISSING, NotFound, 404),
    (409, {"type": "version_conflict_engine_exception", "reason": "conflict"}, BackendError, 502),
    (429, BUSY, BackendBusy, 429),
    (500, {"type": "exception", "reason": "boom"}, BackendUnavailable, 503),
    (503, {"type": "cluster_block_exception", "reason": "blocked"}, BackendUnavailable, 503),
    (500, {"type": "search_phase_execution_exception", "reason": "all shards failed",
           "root_cause": [{"type": "parse_exception", "reason": "x"}]}, BadInput, 400),
])
def test_one_table_for_a_whole_answer_and_an_item(status, error, cls, http):
    whole = osx.TransportError(status, error["type"], {"error": error, "status": status})
    item = item_error({"status": status, "error": error})
    for exc in (whole, item):
        got = translate(exc, "msearch fs", "https://<backend>")
        assert type(got) is cls and got.status == http
    assert str(translate(whole, "msearch fs", "u")) == str(translate(item, "msearch fs", "u"))


def test_a_429_is_a_429_with_retry_after_and_workers_retry_it():
    got = translate(item_error({"status": 429, "error": BUSY}), "msearch fs", "u")
    assert got.status == 429 and got.retry_after == 5 and isinstance(got, BackendUnavailable)
    assert "search queue is full" in str(got)


def test_an_item_without_an_error_translates_to_nothing():
    assert item_error({"status": 200, "hits": {"hits": []}}) is None


class _Client:
    def __init__(self, msearch=None, mget=None, error=None):
        self._msearch, self._mget, self._error = msearch, mget, error

    def msearch(self, body):
        if self._error is not None:
            raise self._error
        return self._msearch

    def mget(self, **kw):
        return self._mget


def _store(**kw) -> Store:
    return Store(Settings(opensearch_url="http://127.0.0.1:1"), client=_Client(**kw))


def test_store_msearch_answers_a_busy_item_as_it_answers_a_busy_cluster():
    ok = {"status": 200, "hits": {"hits": []}}
    with pytest.raises(BackendBusy) as by_item:
        _store(msearch={"responses": [ok, {"status": 429, "error": BUSY}]}).msearch("fs", [{}, {}])
    whole = osx.TransportError(429, BUSY["type"], {"error": BUSY, "status": 429})
    with pytest.raises(BackendBusy) as by_answer:
        _store(error=whole).msearch("fs", [{}, {}])
    assert by_item.value.status == by_answer.value.status == 429
    assert str(by_item.value) == str(by_answer.value)
    with pytest.raises(NotFound, match="factsieve init"):
        _store(msearch={"responses": [{"status": 404, "error": MISSING}]}).msearch("fs", [{}])


def test_store_mget_items_go_through_the_same_table():
    docs = {"docs": [{"_id": "a", "found": True, "_source": {}},
                     {"_id": "b", "error": MISSING}]}
    with pytest.raises(NotFound, match="factsieve init"):
        _store(mget=docs).mget("fs", ["a", "b"], source=["id"])
    docs = {"docs": [{"_id": "b", "error": {"type": "exception", "reason": "shard failed"}}]}
    with pytest.raises(BackendError, match=r"OpenSearch error \(mget b from fs\): exception: shard failed"):
        _store(mget=docs).mget("fs", ["b"], source=["id"])
