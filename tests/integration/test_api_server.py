"""`factsieve serve`: the app under gunicorn answers over real HTTP."""
from __future__ import annotations

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
        except requests.ConnectionError:
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
