"""`factsieve serve`: the app under gunicorn answers over real HTTP."""
from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys

import pytest
import requests

from tests.conftest import ROOT
from tests.integration.conftest import closed_port, settings_env, wait_for

pytestmark = pytest.mark.integration


def test_serve_runs_gunicorn_with_the_factory(api_settings, api_corpus, write_key, tmp_path):
    port = closed_port()
    log = open(tmp_path / "serve.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "cli.main", "serve", "--port", str(port), "--workers", "1"],
                            cwd=ROOT, env=settings_env(api_settings), stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        assert proc.poll() is None, (tmp_path / "serve.log").read_text()
        try:
            return requests.get(f"{base}/healthz", timeout=1).status_code == 200
        except (requests.ConnectionError, requests.Timeout):  # not up yet, or a loaded box
            return False

    try:
        wait_for(up, timeout=30, what="gunicorn")
        assert requests.get(f"{base}/readyz", timeout=30).json()["status"] == "ready"
        resp = requests.post(f"{base}/v1/match", json={"text": "carrots and night vision", "k": 1},
                             headers={"Authorization": f"Bearer {write_key}"}, timeout=30)
        assert resp.status_code == 200 and resp.json()["matches"][0]["id"] == "api-6"
        resp = requests.post(f"{base}/v1/match", data=b"\x00" * 10, timeout=5,
                             headers={"Authorization": f"Bearer {write_key}", "Content-Type": "application/json"})
        assert resp.status_code == 400 and resp.headers["Content-Type"] == "application/problem+json"
        assert "gunicorn" in (tmp_path / "serve.log").read_text().lower()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()
    assert proc.returncode == 0


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
    settings = api_settings.model_copy(update={"max_json_bytes": 1024, "max_request_bytes": 4096,
                                               "index": make_alias(), "evidence_index": make_alias()})
    store, kv = api_services.store, api_services.kv
    port = closed_port()
    log = open(tmp_path / "serve.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "cli.main", "serve", "--port", str(port), "--workers", "1"],
                            cwd=ROOT, env=settings_env(settings), stdout=log, stderr=subprocess.STDOUT)

    def up() -> bool:
        assert proc.poll() is None, (tmp_path / "serve.log").read_text()
        try:
            return requests.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200
        except (requests.ConnectionError, requests.Timeout):  # not up yet, or a loaded box
            return False

    def rows(n: int, prefix: str) -> bytes:
        return "\n".join(json.dumps({"id": f"{prefix}-{i}", "lang": "en",
                                      "claim": f"Synthetic claim {i} about glaciers melting"})
                          for i in range(n)).encode()

    def jobs() -> int:
        return sum(1 for k in kv.client.scan_iter(kv.key("job", "*")) if not k.endswith(":body"))

    evidence = "\n".join(json.dumps({"url": f"https://srv.example.org/{i}", "text": "Glaciers melt."})
                          for i in range(100)).encode()
    try:
        wait_for(up, timeout=30, what="gunicorn")
        before = jobs()
        over = [("/v1/fact-checks?async=true", rows(60, "over"), "application/x-ndjson"),  # the probe's case
                ("/v1/fact-checks", rows(60, "over"), "application/x-ndjson"),
                ("/v1/evidence", evidence, "application/x-ndjson"),
                ("/v1/match", json.dumps({"text": "glaciers"}).encode() + b" " * 2000, "application/json")]
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
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()
