"""The one scrub of backend addresses (``plugin.errors.scrub`` / ``public_problem``): every form a
message may name a backend in, and what must survive it."""
from __future__ import annotations

import pytest

from plugin.errors import BackendUnavailable, BadInput, public_problem, scrub


@pytest.mark.parametrize("text, shown", [
    # URLs, with and without credentials
    ("OpenSearch is not reachable at http://127.0.0.1:9299 (get x)",
     "OpenSearch is not reachable at <backend> (get x)"),
    ("the LLM at http://user:secret@127.0.0.1:9/v1/chat/completions is down",
     "the LLM at <backend> is down"),
    ("Redis at redis://:hunter2@cache.internal:6380/2, then", "Redis at <backend>, then"),
    ("at https://opensearch.example.org/ (search)", "at <backend> (search)"),
    # credentials without a scheme
    ("connect to user:secret@10.0.0.5:9200 failed", "connect to <backend> failed"),
    # host:port and bare addresses
    ("Error 111 connecting to 127.0.0.1:6379. Connection refused.",
     "Error 111 connecting to <backend>. Connection refused."),
    ("10.1.2.3: [Errno 111] Connection refused", "<backend>: [Errno 111] Connection refused"),
    ("node 192.168.0.7 left", "node <backend> left"),
    # IPv6
    ("at [::1]:9200 (info)", "at <backend> (info)"),
    ("at [fe80::1%eth0]:9200", "at <backend>"),
    ("resolves to ::1, a loopback", "resolves to <backend>, a loopback"),
    ("resolves to fe80::1 or ::ffff:10.0.0.1", "resolves to <backend> or <backend>"),
    ("2001:db8:0:0:0:0:0:1 is down", "<backend> is down"),
    # names: localhost, name:port (a compose service name), urllib3's host='…'
    ("localhost:8089 and localhost", "<backend> and <backend>"),
    ("Error -2 connecting to opensearch:9200. Name or service not known.",
     "Error -2 connecting to <backend>. Name or service not known."),
    ("cache.internal:6380 refused", "<backend> refused"),
    ("HTTPConnectionPool(host='os-node-1', port=9200): Max retries",
     "HTTPConnectionPool(<backend>, port=9200): Max retries"),
])
def test_scrub_hides_every_address(text, shown):
    assert scrub(text) == shown


@pytest.mark.parametrize("text", [
    "the job ran longer than 600 s",
    "schema error(s), first at verdict: Input should be 'supported'",
    "finished at 2026-11-26T07:15:18.123+00:00, queued at 07:15",
    "no fact-check with id 'api-1'",
    "see Class::method for details",
    "webhook host 'hooks.example.org' port 443",
])
def test_scrub_keeps_what_is_no_address(text):
    assert scrub(text) == text


def test_public_problem_scrubs_5xx_only():
    down = BackendUnavailable("OpenSearch is not reachable at http://admin:s3cret@127.0.0.1:9 (x)",
                              errors=[{"field": "(body)", "message": "at opensearch:9200"}])
    body = down.to_problem()
    public = public_problem(body)
    assert public["detail"] == "OpenSearch is not reachable at <backend> (x)"
    assert public["errors"] == [{"field": "(body)", "message": "at <backend>"}]
    assert "127.0.0.1" in body["detail"]  # a new dict: the caller's stays whole (for its log)
    # a 4xx is about the client's own input, which may quote a URL it sent
    bad = BadInput("webhook URL 'http://127.0.0.1:1/x' is not allowed").to_problem()
    assert public_problem(bad) == bad
    assert public_problem({"status": 504, "title": "t", "detail": "d"}) == {"status": 504, "title": "t", "detail": "d"}


@pytest.mark.parametrize("text", [":" * 20000, "a:" * 10000, "1:" * 10000, "f::" * 6000,
                                  "[:" * 10000, "a." * 10000, "a-" * 10000, "a" * 20000,
                                  "a:" + "b" * 20000 + "@"])
def test_scrub_is_linear_on_crafted_text(text):
    """A 5xx message can quote text a client chose (an LLM's answer, an OpenSearch reason), and
    every job error is scrubbed when written and read: ``":"*5000`` took 400 s, ``"a:"*2500``
    190 s (the credential form rescanned the rest of the text from every colon)."""
    from tests.guards import hang_guard

    with hang_guard(10):
        assert scrub(text).count("<backend>") <= len(text)
