"""Shared fixtures.

Integration tests run against the real OpenSearch and Redis that `make test` starts (or that
FACTSIEVE_OPENSEARCH_URL / FACTSIEVE_REDIS_URL name). A missing server fails the run: it never
skips. Each test gets its own alias (``fs-test-<random>``) and everything it created is deleted.
The settings file ``make up`` writes (``.factsieve.env``) is not read: tests set their own env.
"""
from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from plugin.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def pytest_configure(config) -> None:
    # the same settings whether or not `make up` left its settings file in the working directory
    os.environ["FACTSIEVE_ENV_FILE"] = ""


@pytest.fixture(scope="session")
def settings() -> Settings:
    return Settings()


@pytest.fixture(scope="session")
def store(settings):
    from plugin.index.store import Store

    s = Store(settings)
    if not s.ping():
        pytest.fail(f"OpenSearch is not reachable at {settings.opensearch_url}: run `make up` "
                    "(or `make test`, which starts it)", pytrace=False)
    return s


@pytest.fixture(scope="session")
def embedder(settings):
    from plugin.embedding import load_embedder
    from plugin.settings import TEST_MODEL

    if settings.embedding_model == TEST_MODEL:
        from plugin.build.models import build_models

        # the test model, its tuned query towers and the rerankers committed as adapters
        build_models(settings)
    return load_embedder(settings)


def _cleanup(store, alias: str) -> None:
    store.delete_index(f"{alias}-v*")
    store.delete_index_template(f"factsieve-{alias}")
    delete_components(store, alias)


def delete_components(store, alias: str) -> None:
    """The alias' own component templates that no index template composes any more (an earlier
    version's ``knn-<dim>``): a test run leaves none behind on the cluster."""
    from plugin.errors import NotFound

    try:
        found = store.request("list components", "GET", f"/_component_template/factsieve-{alias}-*")
    except NotFound:
        return
    for c in found.get("component_templates", []):
        store.request("delete component", "DELETE", f"/_component_template/{c['name']}")


@pytest.fixture
def make_alias(store):
    """Factory for unique aliases; deletes their indexes and index template afterwards."""
    made: list[str] = []

    def make() -> str:
        alias = f"fs-test-{uuid.uuid4().hex[:10]}"
        made.append(alias)
        return alias

    yield make
    for alias in made:
        _cleanup(store, alias)


def ingest_files(store, embedder, alias, files, settings):
    from plugin.ingest import Format, ingest, read_records
    from plugin.index.templates import IndexSpec, ensure_index

    ensure_index(store, IndexSpec(alias=alias, model=embedder.name, dimension=embedder.dim))
    return ingest(read_records(files, Format.auto), store=store, embedder=embedder, index=alias)


@pytest.fixture(scope="session")
def sample_alias(store, embedder, settings):
    """One index with the bundled sample corpus (CLEF-2020 slice + MultiClaim trial), per session."""
    alias = f"fs-test-samples-{uuid.uuid4().hex[:8]}"
    report = ingest_files(store, embedder, alias, [SAMPLES / "clef2020" / "factchecks.jsonl",
                                                   SAMPLES / "multiclaim" / "factchecks.jsonl"], settings)
    assert report.rejected == 0, report.rejects
    yield alias
    _cleanup(store, alias)
