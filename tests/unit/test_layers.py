"""The packages form layers: core → engines → stages → service → edges, and the lab is a wing.

A package may import its own modules and any package on a lower layer, never one above it.
Stages (one layer) may import each other only where ``STAGE_USES`` says so, and the packages
form no circle. ``plugin.lab`` may import anything below the edges; nothing below imports it and,
of the edges, only ``cli`` does (``api`` and ``workers`` never load the lab).

Imports are read from the source with ``ast`` and resolved as ``test_import_cycles`` resolves
them, at any depth (inside functions too). Unlike that test, imports under ``if TYPE_CHECKING:``
count here: they never run, so they cannot make a cycle at import time, but a type named from a
higher package is still knowledge of that package (a signature that reads ``Services`` ties the
stage to the container), and a reader has to open it to understand the lower module.
"""
from __future__ import annotations

import ast
from pathlib import Path

from tests.unit import test_import_cycles as imports

#: the layers, lowest first; a package is a top-level package or ``plugin.<name>``
LAYERS: dict[str, tuple[str, ...]] = {
    # records, settings, errors, owners, webhook event names, the outbound address rules, URL
    # redaction: what every room stands on; they import nothing of ours but each other
    "core": ("plugin", "plugin.errors", "plugin.settings", "plugin.settings_llm", "plugin.settings_channels", "plugin.models", "plugin.params",
             "plugin.owners", "plugin.artefacts", "plugin.events", "plugin.net", "plugin.urls"),
    # one module per backend or model: OpenSearch, Redis, the embedder, the LLM, images, languages
    "engines": ("plugin.index", "plugin.kv", "plugin.embedding", "plugin.llm", "plugin.image",
                "plugin.lang"),
    "stages": ("plugin.search", "plugin.ingest", "plugin.evidence", "plugin.verify",
               "plugin.review", "plugin.learn", "plugin.build", "plugin.claims", "plugin.channels"),
    "service": ("plugin.service",),
    "edges": ("api", "workers", "cli"),
}
LAB = "plugin.lab"

#: stage → the stages it may import, and why
STAGE_USES: dict[str, dict[str, str]] = {
    "plugin.evidence": {
        "plugin.search": "evidence retrieval is the same hybrid retrieval: fusion, query bodies, variants",
        "plugin.ingest": "evidence documents are read by ingest's format readers and its streaming pipeline",
    },
    "plugin.verify": {
        "plugin.search": "the lookup of a published fact-check is a match",
        "plugin.evidence": "the evidence loop retrieves passages",
    },
    "plugin.review": {
        "plugin.search": "the desk's search for the right fact-check is a match request",
    },
    "plugin.learn": {
        "plugin.search": "learning recalibrates and retrains what the search serves, mining with its matcher",
        "plugin.review": "learning reads the desk's decisions",
        "plugin.build": "the reranker update builds the model it trained",
        "plugin.ingest": "the trainer indexes its fixed evaluation dataset as fact-checks are indexed",
        "plugin.claims": "a post whose claim the desk answered gets that answer (the claim step)",
    },
    "plugin.claims": {
        "plugin.search": "a post joins a claim by the matcher's same-claim test",
    },
    "plugin.channels": {
        "plugin.search": "a tipline answers from a message's match",
    },
    "plugin.build": {
        "plugin.search": "it builds the reranker folders the search loads, named as the search names them",
        "plugin.verify": "it builds the verdict model folders verification loads",
    },
}

#: edge → the edges it may import, and why
EDGE_USES: dict[str, dict[str, str]] = {
    "cli": {"api": "``factsieve serve`` starts the API", "workers": "``factsieve worker`` starts them"},
    "api": {"workers": "the API sends jobs to the workers' queues by their names"},
}

RANK = {pkg: i for i, layer in enumerate(LAYERS.values()) for pkg in layer}


def package_of(module: str) -> str:
    """``plugin.search.matcher`` → ``plugin.search``; ``api.desk.views`` → ``api``."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "plugin" else parts[0]


def package_graph() -> dict[tuple[str, str], list[str]]:
    """``(package, package it imports)`` → the module imports behind it, TYPE_CHECKING ones too."""
    modules = imports.project_modules()
    original = imports._is_type_checking
    imports._is_type_checking = lambda test: False  # count what only type checkers read, too
    try:
        found: dict[tuple[str, str], list[str]] = {}
        for name, path in sorted(modules.items()):
            for dep in sorted(imports.dependencies(name, path, modules)):
                pair = (package_of(name), package_of(dep))
                if pair[0] != pair[1]:
                    found.setdefault(pair, []).append(f"{name} -> {dep}")
        return found
    finally:
        imports._is_type_checking = original


def broken(pair: tuple[str, str]) -> str | None:
    """Why ``a`` may not import ``b``, or ``None`` when it may."""
    a, b = pair
    if b == LAB:
        return None if a == "cli" else "only the CLI imports the lab"
    if a == LAB:
        return None if RANK[b] < RANK["api"] else "the lab imports nothing of the edges"
    if RANK[b] > RANK[a]:
        return "imports a package on a higher layer"
    if RANK[b] == RANK[a] == RANK["plugin.search"] and b not in STAGE_USES.get(a, {}):
        return "a stage that STAGE_USES does not allow"
    if RANK[b] == RANK[a] == RANK["api"] and b not in EDGE_USES.get(a, {}):
        return "an edge that EDGE_USES does not allow"
    return None


def test_every_package_is_on_a_layer() -> None:
    packages = {p for pair in package_graph() for p in pair}
    assert packages - set(RANK) - {LAB} == set(), "place the new package on a layer in LAYERS"


def test_the_rule_catches_what_it_forbids() -> None:
    assert broken(("plugin.settings", "plugin.service")) == "imports a package on a higher layer"
    assert broken(("plugin.learn", LAB)) == "only the CLI imports the lab"
    assert broken(("workers", LAB)) == "only the CLI imports the lab"
    assert broken((LAB, "api")) == "the lab imports nothing of the edges"
    assert broken(("plugin.search", "plugin.verify")) == "a stage that STAGE_USES does not allow"
    assert broken(("workers", "api")) == "an edge that EDGE_USES does not allow"
    assert broken(("cli", LAB)) is None and broken((LAB, "plugin.service")) is None
    assert broken(("plugin.verify", "plugin.search")) is None


def test_type_checking_imports_count(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                   "    from plugin.service.services import Services\n")
    modules = {**imports.project_modules(), "plugin.index.m": tmp_path / "m.py"}
    original = imports._is_type_checking
    imports._is_type_checking = lambda test: False
    try:
        deps = imports.dependencies("plugin.index.m", tmp_path / "m.py", modules)
    finally:
        imports._is_type_checking = original
    assert deps == {"plugin.service.services"}
    assert "plugin.lab" in {b for (a, b) in package_graph() if a == "cli"}


def test_no_package_imports_one_above_it_and_the_lab_only_from_the_cli() -> None:
    found = [f"{a} -> {b} ({why}): " + ", ".join(via)
             for (a, b), via in package_graph().items() if (why := broken((a, b)))]
    assert found == [], "\n".join(found)


def test_the_packages_form_no_circle() -> None:
    graph: dict[str, set[str]] = {}
    for a, b in package_graph():
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    assert imports.cycles(graph) == []


def test_every_allowance_is_used() -> None:
    """An allowance no import needs any more is taken out, so the table stays the house as it is."""
    pairs = set(package_graph())
    unused = [(a, b) for table in (STAGE_USES, EDGE_USES) for a, uses in table.items()
              for b in uses if (a, b) not in pairs]
    assert unused == []
