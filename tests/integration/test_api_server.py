"""`factsieve serve`: the app under gunicorn answers over real HTTP."""
from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

from tests.conftest import ROOT
from tests.integration.conftest import closed_port, settings_env, wait_for

pytestmark = pytest.mark.integration


@contextmanager
def serving(api_settings, tmp_path: Path) -> Iterator[int]:
    """``factsieve serve`` with one worker on a free port (yielded); stopped with SIGTERM, which
    must exit 0."""
    port = closed_port()
    log = open(tmp_path / "serve.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "cli.main", "serve", "--port", str(port), "--workers", "1"],
                            cwd=ROOT, env=settings_env(api_settings), stdout=log, stderr=subprocess.STDOUT)

    def up() -> bool:
        assert proc.poll() is None, (tmp_path / "serve.log").read_text()
        try:
            return requests.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200
        except (requests.ConnectionError, requests.Timeout):  # not up yet, or a loaded box
            return False

    try:
        wait_for(up, timeout=30, what="gunicorn")
        yield port
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()
    assert proc.returncode == 0


def test_serve_runs_gunicorn_with_the_factory(api_settings, api_corpus, write_key, tmp_path):
    with serving(api_settings, tmp_path) as port:
        base = f"http://127.0.0.1:{port}"
        assert requests.get(f"{base}/readyz", timeout=30).json()["status"] == "ready"
        resp = requests.post(f"{base}/v1/match", json={"text": "carrots and night vision", "k": 1},
                             headers={"Authorization": f"Bearer {write_key}"}, timeout=30)
        assert resp.status_code == 200 and resp.json()["matches"][0]["id"] == "api-6"
        resp = requests.post(f"{base}/v1/match", data=b"\x00" * 10, timeout=5,
                             headers={"Authorization": f"Bearer {write_key}", "Content-Type": "application/json"})
        assert resp.status_code == 400 and resp.headers["Content-Type"] == "application/problem+json"
        assert "gunicorn" in (tmp_path / "serve.log").read_text().lower()


def raw_request(port: int, data: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``data`` as is (no client would send these requests) and read the answer to EOF."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v for k, v in (line.split(": ", 1) for line in lines)}
    return int(status.split()[1]), headers, body


def headers_of(*lines: str) -> bytes:
    return ("GET /healthz HTTP/1.1\r\nHost: x\r\n" + "".join(f"{line}\r\n" for line in lines)
            + "\r\n").encode("latin-1")


#: Requests gunicorn answers itself, before the app sees them, and the status it gives.
GUNICORN_ERRORS = [
    (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),  # over limit_request_line
    (headers_of(*(f"X-H{i}: v" for i in range(150))), 431),  # over limit_request_fields
    (headers_of("X-Big: " + "v" * 9000), 431),  # over limit_request_field_size
    (headers_of("X-Nul: a\x00b"), 400),
    (headers_of("X-Cr: a\rb"), 400),
    (b"G\x00T / HTTP/1.1\r\nHost: x\r\n\r\n", 400),  # not a method
]


def test_gunicorns_own_errors_are_problems(api_settings, tmp_path):
    """Its pages were HTML; now they are problems like every other error of the API."""
    with serving(api_settings, tmp_path) as port:
        for request_bytes, status in GUNICORN_ERRORS:
            got, headers, body = raw_request(port, request_bytes)
            assert got == status, (request_bytes[:40], body)
            assert headers["content-type"] == "application/problem+json", (request_bytes[:40], body)
            problem = json.loads(body)
            assert problem["status"] == status and problem["title"] and problem["type"] == "about:blank"
        assert raw_request(port, headers_of())[0] == 200  # the worker still serves


def post_chunked(port: int, path: str, body: bytes, ctype: str, key: str) -> tuple[int, dict]:
    """A raw ``Transfer-Encoding: chunked`` POST (1000-byte chunks, no Content-Length)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("POST", path, body=(body[i:i + 1000] for i in range(0, len(body), 1000)),
                     encode_chunked=True, headers={"Authorization": f"Bearer {key}", "Content-Type": ctype})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def test_chunked_bodies_through_gunicorn_are_whole_or_413(api_settings, api_services, write_key,
                                                          make_alias, tmp_path):
    """gunicorn is what hands the app a chunked body (wsgi.input_terminated): over the limit it
    is a 413 that writes nothing, within it every byte is read."""
    from plugin.image.inputs import image_body_bytes

    settings = api_settings.model_copy(update={"max_json_bytes": 1024, "max_request_bytes": 4096,
                                               "image_max_bytes": 1024,
                                               "index": make_alias(), "evidence_index": make_alias()})
    store, kv = api_services.store, api_services.kv

    def rows(n: int, prefix: str) -> bytes:
        return "\n".join(json.dumps({"id": f"{prefix}-{i}", "lang": "en",
                                      "claim": f"Synthetic claim {i} about glaciers melting"})
                          for i in range(n)).encode()

    def jobs() -> int:
        return sum(1 for k in kv.client.scan_iter(kv.key("job", "*")) if not k.endswith(":body"))

    evidence = "\n".join(json.dumps({"url": f"https://srv.example.org/{i}", "text": "Glaciers melt."})
                          for i in range(100)).encode()
    with serving(settings, tmp_path) as port:
        before = jobs()
        over = [("/v1/fact-checks?async=true", rows(60, "over"), "application/x-ndjson"),  # the probe's case
                ("/v1/fact-checks", rows(60, "over"), "application/x-ndjson"),
                ("/v1/evidence", evidence, "application/x-ndjson"),
                # a route that takes an image: its limit holds one of image_max_bytes in base64
                ("/v1/match", json.dumps({"text": "glaciers"}).encode() + b" " * image_body_bytes(settings),
                 "application/json")]
        for path, body, ctype in over:
            status, problem = post_chunked(port, path, body, ctype, write_key)
            assert status == 413 and problem["status"] == 413, (path, status, problem)
            assert "bytes" in problem["detail"], problem
        assert jobs() == before
        assert not store.alias_indices(settings.index) and not store.alias_indices(settings.evidence_index)

        status, report = post_chunked(port, "/v1/fact-checks", rows(20, "ok"), "application/x-ndjson", write_key)
        assert status == 200 and (report["indexed"], report["rejected"]) == (20, 0), report
        status, found = post_chunked(port, "/v1/match", json.dumps({"text": "glaciers melting", "k": 3}).encode(),
                                     "application/json", write_key)
        assert status == 200 and len(found["matches"]) == 3, found
        status, report = post_chunked(port, "/v1/evidence", evidence[:2000].rsplit(b"\n", 1)[0],
                                      "application/x-ndjson", write_key)
        assert status == 200 and report["rejected"] == 0 and report["documents"] > 10, report
