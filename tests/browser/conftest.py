"""The desk in a real browser: Debian's chromium (``make up`` installs it) driven by playwright,
against ``factsieve serve`` (gunicorn), a ``factsieve worker``, OpenSearch and Redis.

One namespaced deployment per session, as in ``tests/integration/conftest.py`` (whose helpers
this reuses). Two tenants: ``desk-a`` (two reviewers,
Ana and Bo, and a read-only key) and ``desk-b`` (Cy). Nothing skips: a missing chromium fails.
"""
from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.conftest import ROOT
from tests.integration.conftest import (
    API_FACTCHECKS,
    Worker,
    channel_fakes,
    cleanup_deployment,
    namespaced,
    receiver,
    wait_for,
)
from tests.integration.test_api_server import serving

#: the integration suite's webhook receiver and fake tipline APIs, as fixtures here too
__all__ = ["channel_fakes", "receiver"]

CHROMIUM = "/usr/bin/chromium"
#: the docs' pictures of the desk, written only by ``make docs-images`` (which names this folder
#: in FACTSIEVE_DOCS_IMAGES); otherwise the tests write them to a temporary folder, so that
#: ``make test`` leaves the checkout clean
DOCS_IMAGES = ROOT / "docs" / "img"


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory) -> Path:
    """Where a test saves the screenshots the docs show."""
    import os

    chosen = os.environ.get("FACTSIEVE_DOCS_IMAGES")
    return Path(chosen) if chosen else tmp_path_factory.mktemp("docs-img")


@pytest.fixture(scope="session")
def desk_settings(settings, receiver, channel_fakes):
    return namespaced(settings, uuid.uuid4().hex[:10], webhook_allowed_hosts=(receiver.origin,),
                      telegram_api_url=channel_fakes.telegram_url, whatsapp_api_url=channel_fakes.whatsapp_url)


@pytest.fixture(scope="session")
def desk_services(desk_settings, store, embedder):
    from plugin.ingest import Format, ingest, read_records
    from plugin.service.services import Services

    services = Services(desk_settings, store=store, embedder=embedder)
    services.factchecks.ensure()
    report = ingest(read_records([API_FACTCHECKS], Format.jsonl), store=store, embedder=embedder,
                    index=desk_settings.index)
    assert report.rejected == 0, report.rejects
    yield services
    cleanup_deployment(desk_settings, store)


@pytest.fixture(scope="session")
def keys(desk_services) -> dict[str, str]:
    from plugin.service.keys import Scope

    made = {"ana": ("Ana Reviewer", Scope.WRITE, "desk-a"), "bo": ("Bo Reviewer", Scope.WRITE, "desk-a"),
            "reader": ("Rae Reader", Scope.READ, "desk-a"), "cy": ("Cy Other", Scope.WRITE, "desk-b")}
    return {who: desk_services.keys.create(name, scope, tenant)[1] for who, (name, scope, tenant) in made.items()}


@pytest.fixture(scope="session")
def served(desk_services, tmp_path_factory) -> Iterator[str]:
    """``factsieve serve`` (gunicorn) on a free port, with a worker; yields the base URL."""
    logs = tmp_path_factory.mktemp("desk")
    worker = Worker(desk_services.settings, logs / "worker.log")
    try:
        with serving(desk_services.settings, logs) as port:
            base = f"http://127.0.0.1:{port}"
            assert requests.get(f"{base}/readyz", timeout=120).status_code == 200  # the model is loaded
            yield base
    finally:
        worker.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists() or not shutil.which("chromium"):
        pytest.fail(f"{CHROMIUM} is missing: `make up` installs Debian's chromium", pytrace=False)
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def context(browser, served):
    ctx = browser.new_context(base_url=served, viewport={"width": 1280, "height": 900})
    ctx.set_default_timeout(20_000)
    yield ctx
    ctx.close()


def sign_in(page, key: str) -> None:
    page.goto("/desk/")
    assert "/desk/signin" in page.url
    page.get_by_label("Your API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/desk/")


def submit(base: str, key: str, text: str, **extra: Any) -> str:
    """POST a post (``extra``: more of its fields, e.g. ``image``); wait until its job succeeded
    and its item is in the queue; returns its id."""
    post_id = f"post-{uuid.uuid4().hex[:8]}"
    headers = {"Authorization": f"Bearer {key}"}
    body = {"id": post_id, "date": "2020-05-01", "url": "https://social.example.com/p/1", **extra}
    if text:  # an image post may have no text of its own
        body["text"] = text
    resp = requests.post(f"{base}/v1/posts", json=body, headers=headers, timeout=30)
    assert resp.status_code == 202, resp.text
    job = resp.json()["job_id"]

    def done() -> dict | None:
        body = requests.get(f"{base}/v1/jobs/{job}", headers=headers, timeout=30).json()
        return body if body["status"] in ("succeeded", "failed") else None

    assert wait_for(done, timeout=120, interval=0.2, what=f"job {job}")["status"] == "succeeded"

    # the queue is a search: a new item joins it at the review index's next refresh (within a
    # second), so wait for it there before a page is asked to show it
    def queued() -> bool:
        body = requests.get(f"{base}/v1/review", params={"status": "pending", "limit": 50}, headers=headers,
                            timeout=30).json()
        return any(i["post_id"] == post_id for i in body["items"])

    wait_for(queued, timeout=30, interval=0.2, what=f"{post_id} in the queue")
    return post_id
