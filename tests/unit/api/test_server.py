"""gunicorn's own error pages, written as problems (RFC 9457) by our workers."""
from __future__ import annotations

import json
import logging
import socket
from types import SimpleNamespace

import pytest

from api.server import (INTERNAL_DETAIL, MAX_DETAIL_CHARS, ProblemSyncWorker, ProblemThreadWorker,
                        problem_page)


def parse(raw: bytes) -> tuple[str, dict[str, str], dict]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status, *lines = head.decode("ascii").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines)
    assert int(headers["Content-Length"]) == len(body)
    return status, headers, json.loads(body)


@pytest.mark.parametrize(("status", "reason", "message", "detail"), [
    (414, "URI Too Long", "8190", "8190"),
    (431, "Request Header Fields Too Large", "Error parsing headers: 'limit request headers fields'",
     "Error parsing headers: 'limit request headers fields'"),
    (400, "Bad Request", "Invalid header value 'a\\x00b' ☃", "Invalid header value 'a\\x00b' ☃"),
    (500, "Internal Server Error", "", INTERNAL_DETAIL),
    (400, "Bad Request", "x" * 1000, "x" * MAX_DETAIL_CHARS),
])
def test_problem_page(status, reason, message, detail):
    line, headers, body = parse(problem_page(status, reason, message))
    assert line == f"HTTP/1.1 {status} {reason}"
    assert headers["Content-Type"] == "application/problem+json" and headers["Connection"] == "close"
    assert body == {"type": "about:blank", "title": reason, "status": status, "detail": detail}


def _worker(cls, alive: bool):
    worker = cls.__new__(cls)  # no arbiter: only what handle_error reads
    worker.alive, worker.cfg, worker.log = alive, SimpleNamespace(timeout=60), logging.getLogger("t")
    return worker


@pytest.mark.parametrize("cls", [ProblemSyncWorker, ProblemThreadWorker])
def test_a_request_stopped_at_the_timeout_is_503(cls):
    """SIGABRT (the arbiter's timeout) sets alive = False and raises SystemExit in the request;
    gunicorn wrote a bare HTML 500 for it."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        _worker(cls, alive=False).handle_error(None, ours, ("127.0.0.1", 1), SystemExit(1))
        ours.close()
        line, headers, body = parse(theirs.recv(65536))
    assert line == "HTTP/1.1 503 Service Unavailable"
    assert body["status"] == 503 and "60 s" in body["detail"]
