"""Two deployments on one cluster: one's ``init`` leaves the other's templates as they were
(issue 35, item 10), over the real OpenSearch."""
from __future__ import annotations

import uuid

import pytest

from plugin.errors import NotFound
from plugin.index.templates import IndexSpec, install_templates

pytestmark = pytest.mark.integration


def _components(store, names):
    out = {}
    for name in names:
        try:
            out[name] = store.request("get component template", "GET", f"/_component_template/{name}")
        except NotFound:
            out[name] = None
    return out


def test_one_deployments_init_does_not_change_anothers_or_the_defaults_templates(store):
    tag = uuid.uuid4().hex[:8]
    a = IndexSpec(alias=f"fs-test-a-{tag}", model="m", dimension=8, replicas=0)
    b = IndexSpec(alias=f"fs-test-b-{tag}", model="m", dimension=8, replicas=1)
    shared = ["factsieve-factcheck-fields", "factsieve-knn-8"]
    written = []
    try:
        default_before = _components(store, shared)
        written += install_templates(store, b)
        b_names = [p.split("/", 1)[1] for p in written if p.startswith("_component_template/")]
        b_before = _components(store, b_names)
        written += install_templates(store, a)
        assert all(a.alias in p for p in written[len(b_names) + 1:])
        assert _components(store, b_names) == b_before
        assert _components(store, shared) == default_before
    finally:
        for path in sorted(written, key=lambda p: not p.startswith("_index_template/")):
            kind, name = path.split("/", 1)
            try:
                store.request("delete template", "DELETE", f"/{kind}/{name}")
            except NotFound:
                pass
