"""The evidence index: its spec (the ``evidence`` index template, the configured model) and
making sure it exists, through the same versioned-alias machinery as the fact-checks."""
from __future__ import annotations

from plugin.embedding import Embedder
from plugin.index.store import Store
from plugin.index.templates import IndexSpec, ensure_index
from plugin.settings import Settings


def evidence_spec(settings: Settings, embedder: Embedder, alias: str | None = None) -> IndexSpec:
    """``<evidence_index>-vN`` from ``index_templates/evidence.index_template.json``."""
    return IndexSpec(alias=alias or settings.evidence_index, model=embedder.name,
                     dimension=embedder.dim, replicas=settings.index_replicas, template="evidence")


def ensure_evidence_index(store: Store, settings: Settings, embedder: Embedder,
                          alias: str | None = None) -> str:
    """Templates installed and the evidence alias present, built for ``embedder``'s model (an
    existing alias is checked against it, never recreated); returns the concrete index."""
    return ensure_index(store, evidence_spec(settings, embedder, alias))
