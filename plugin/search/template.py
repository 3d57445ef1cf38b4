"""The stored search template ``factsieve-match``: FactSieve's hybrid match as one OpenSearch
request, for newsroom tools that talk to OpenSearch directly (a CMS plugin, Dashboards, curl).
The fusion pipeline travels inside the template (``_search/template`` ignores a pipeline *name*),
and the index decides ``mode == "mono"`` (``MONO_FIELD``: mustache has no equality test). The
file holds mustache ``{{...}}`` for request params and ``<<...>>`` for what ``factsieve init``
fills in: pure string work, tested without a server. Params and limits:
``docs/design/search-template.md``.
"""
from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from plugin.search.hybrid import fusion_pipeline
from plugin.search.queries import KNN_EF_SEARCH, SOURCE_FIELDS
from plugin.search.retrieval import RetrievalConfig, RetrieverKind

TEMPLATE_ID = "factsieve-match"
#: the constant_keyword field (value ``mono``) the template's mode test reads
MONO_FIELD = "factsieve_mode_mono"
MONO_MAPPING = {MONO_FIELD: {"type": "constant_keyword", "value": "mono"}}


@cache
def _read(name: str) -> str:
    return resources.files("index_templates").joinpath(f"search/{name}.mustache").read_text(encoding="utf-8")


def fill(text: str, values: dict[str, Any]) -> str:
    """Replace every ``<<name>>`` in ``text``; an unknown name is an error, not a silent hole."""
    out = text
    for name, value in values.items():
        out = out.replace(f"<<{name}>>", value if isinstance(value, str) else json.dumps(value))
    if "<<" in out:
        raise ValueError(f"unfilled placeholder in search template: {out[out.index('<<'):][:40]!r}")
    return out


def template_fits(config: RetrievalConfig) -> str | None:
    """Why ``config`` cannot be the template's configuration, or ``None`` when it can: one BM25
    and one dense retriever over the post, one weight set for every mode (a template cannot
    choose a pipeline by mode), and a fusion neural-search runs (``fusion_pipeline``)."""
    kinds = [(r.kind, r.query) for r in config.retrievers]
    if kinds != [(RetrieverKind.BM25, "post"), (RetrieverKind.DENSE, "post")]:
        return ("the template runs one BM25 then one dense retriever over the post (the "
                "pipeline's weights follow the sub-queries' order)")
    if config.weights(crosslingual=False) != config.weights(crosslingual=True):
        return "its weights differ by mode, and a stored template cannot choose a pipeline by mode"
    if config.rerank is not None or config.boosts or config.collapse or config.mode:
        return "reranking, boosts, collapsing and forced modes are not available in a template"
    got = fusion_pipeline(config, list(config.weights(crosslingual=False).values()))
    return got if isinstance(got, str) else None


def match_template(config: RetrievalConfig, *, model_id: str, query_prefix: str) -> str:
    """The mustache source of ``factsieve-match`` for ``config`` and the hosted model."""
    why = template_fits(config)
    if why is not None:
        raise ValueError(f"configuration {config.name!r} cannot be a search template: {why}")
    got = fusion_pipeline(config, list(config.weights(crosslingual=False).values()))
    assert isinstance(got, tuple)
    return fill(_read(TEMPLATE_ID), {
        "source_fields": SOURCE_FIELDS, "pipeline": got[1], "depth": config.candidates,
        "model_id": model_id, "query_prefix": json.dumps(query_prefix)[1:-1],
        "ef_search": max(KNN_EF_SEARCH, config.candidates),
        "filters": fill(_read("filters").strip(), {"mono_field": MONO_FIELD})})
