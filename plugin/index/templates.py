"""Install FactSieve's index templates and manage versioned indexes behind an alias.

The JSON bodies live in the ``index_templates`` package (data, not code). Installing is a set
of PUTs that are safe to repeat; nothing here ever deletes an index. Each versioned index
(``<alias>-v1``, ``-v2`` …) records in its mapping ``_meta`` the embedding model and dimension it
was built with, and queries or ingests with another model are refused.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from plugin.errors import BadInput, ModelMismatch, NotFound
from plugin.index import rolling
from plugin.index.bodies import load_template, render
from plugin.index.store import Store

SCHEMA_VERSION = 1
_ALIAS_RE = re.compile(r"^[a-z0-9][a-z0-9_.\-]{0,200}$")


def check_alias_name(alias: str) -> str:
    if not _ALIAS_RE.match(alias):
        raise BadInput(f"invalid index/alias name {alias!r}: use lower-case letters, digits, '-', '_', '.'")
    return alias


@dataclass(frozen=True)
class IndexSpec:
    """What a versioned index is built with."""

    alias: str
    model: str
    dimension: int
    replicas: int = 0
    #: which kind of index: ``index_templates/<template>.index_template.json``, whose
    #: ``composed_of`` names the component templates installed with it
    template: str = "factchecks"

    def meta(self) -> dict[str, Any]:
        return {"factsieve": {"schema_version": SCHEMA_VERSION, "embedding_model": self.model,
                              "embedding_dim": self.dimension}}


def _values(spec: IndexSpec) -> dict[str, Any]:
    """What the ``{{placeholders}}`` of every body are filled with. ``analysis`` is the fact-check
    component's analyzers, so that every kind of index analyses text the same way from one
    definition (a component's mappings may only use analyzers from its own settings)."""
    analysis = load_template("component/factsieve-factcheck-fields")["template"]["settings"]["analysis"]
    return {"alias": spec.alias, "dimension": spec.dimension, "replicas": spec.replicas,
            "analysis": analysis}


def component_name(alias: str, name: str) -> str:
    """The deployment's own name for a packaged component (``factsieve-knn-384`` of alias
    ``fs-a-factchecks`` is ``factsieve-fs-a-factchecks-knn-384``): every object ``init`` writes
    carries its alias, as the index template (``factsieve-<alias>``) always did. Shared names let
    a namespaced deployment on a shared cluster rewrite what the default one composes (issue 35,
    item 10): another version's analyzers, another replica count."""
    return f"factsieve-{alias}-{name.removeprefix('factsieve-')}"


def template_bodies(spec: IndexSpec) -> dict[str, dict[str, Any]]:
    """Every body ``install_templates`` PUTs, keyed by its API path, components first (pure;
    used by tests too).

    The components are the ones the index template's ``composed_of`` names, each under the
    deployment's name (``component_name``); one whose name holds a placeholder
    (``factsieve-knn-{{dimension}}``) is one file (``component/factsieve-knn``) rendered once
    per value.
    """
    values = _values(spec)
    index_template = render(load_template(f"{spec.template}.index_template"), values)
    bodies, composed = {}, []
    for name in load_template(f"{spec.template}.index_template")["composed_of"]:
        file = name.split("-{{", 1)[0]
        own = component_name(spec.alias, render(name, values))
        bodies[f"_component_template/{own}"] = render(load_template(f"component/{file}"), values)
        composed.append(own)
    bodies[f"_index_template/factsieve-{spec.alias}"] = {**index_template, "composed_of": composed}
    return bodies


def install_templates(store: Store, spec: IndexSpec) -> list[str]:
    """PUT the component and index templates (idempotent). Returns the paths written."""
    written = []
    for path, body in template_bodies(spec).items():
        kind, name = path.split("/", 1)
        if kind == "_component_template":
            store.put_component_template(name, body)
        else:
            store.put_index_template(name, body)
        written.append(path)
    return written


def _version_of(index: str, alias: str) -> int:
    m = re.fullmatch(re.escape(alias) + r"-v(\d+)", index)
    return int(m.group(1)) if m else 0


def current_index(store: Store, alias: str) -> str | None:
    found = store.alias_indices(alias)
    if len(found) > 1:
        rolled = rolling.newest(alias, found)  # a rolling alias: its newest index is current
        if rolled is not None:
            return rolled
        raise BadInput(f"alias {alias!r} points at several indexes {found}; FactSieve expects one")
    return found[0] if found else None


def create_version(store: Store, spec: IndexSpec, *, point_alias: bool) -> str:
    """Create the next ``<alias>-vN`` index with the model recorded in ``_meta``.

    With ``point_alias`` the alias is moved to it atomically (the way to change models without
    downtime is: create a version, ingest into it, then ``switch_alias``).
    """
    install_templates(store, spec)
    versions = [_version_of(i, spec.alias) for i in store.indices_matching(f"{spec.alias}-v*")]
    name = f"{spec.alias}-v{max(versions, default=0) + 1}"
    store.create_index(name, {"mappings": {"_meta": spec.meta()}})
    if point_alias:
        switch_alias(store, spec.alias, name)
    return name


def switch_alias(store: Store, alias: str, index: str) -> None:
    actions: list[dict[str, Any]] = [{"remove": {"index": old, "alias": alias}}
                                     for old in store.alias_indices(alias) if old != index]
    actions.append({"add": {"index": index, "alias": alias}})
    store.update_aliases(actions)


def ensure_index(store: Store, spec: IndexSpec) -> str:
    """The concrete index behind the alias, checked against the model; created (templates first,
    ``install_index``) only when the alias does not exist yet.

    The query and ingest paths call this with the runtime identity, which on a secured cluster
    may read and write documents and nothing else: an existing alias is read, never written to.
    Templates are (re)installed by ``install_index``, which ``factsieve init`` runs.
    """
    check_alias_name(spec.alias)
    index = current_index(store, spec.alias)
    if index is None:
        return install_index(store, spec)
    check_model(store, spec.alias, spec.model, spec.dimension)
    return index


def install_index(store: Store, spec: IndexSpec) -> str:
    """Install templates and make sure the alias exists; returns the concrete index.

    Safe to repeat (``factsieve init``): an existing alias is checked against the model, never
    recreated. Needs the admin identity on a secured cluster.
    """
    check_alias_name(spec.alias)
    install_templates(store, spec)
    index = current_index(store, spec.alias)
    if index is None:
        if store.index_exists(spec.alias):
            raise BadInput(f"{spec.alias!r} is a concrete index, not an alias: FactSieve manages "
                           f"versioned indexes behind an alias; choose another alias name "
                           f"(FACTSIEVE_INDEX, FACTSIEVE_EVIDENCE_INDEX)")
        index = create_version(store, spec, point_alias=True)
    else:  # an index made by an older version gets the fields added since (``owner``)
        wanted = template_properties(spec)
        have = store.mapping_properties(index)
        if missing := {name: body for name, body in wanted.items() if name not in have}:
            store.put_mapping(index, {"properties": missing})
    check_model(store, spec.alias, spec.model, spec.dimension)
    return index


def template_properties(spec: IndexSpec) -> dict[str, Any]:
    """The top-level fields the templates map for ``spec``'s kind of index (pure): what an
    index created now has, and an older one is given by ``install_index``."""
    out: dict[str, Any] = {}
    for path, body in template_bodies(spec).items():
        if path.startswith("_component_template/"):
            out.update(body["template"].get("mappings", {}).get("properties", {}))
    return out


def index_model(store: Store, alias: str) -> dict[str, Any]:
    index = current_index(store, alias)
    if index is None:
        raise NotFound(f"no index behind alias {alias!r}: run `factsieve init` first")
    meta = store.mapping_meta(index).get("factsieve", {})
    return {"index": index, **meta}


def check_model(store: Store, alias: str, model: str, dimension: int) -> dict[str, Any]:
    """Refuse to query or ingest with another embedding model than the index was built with."""
    meta = index_model(store, alias)
    if meta.get("embedding_model") != model or meta.get("embedding_dim") != dimension:
        raise ModelMismatch(
            f"index {meta['index']!r} was built with embedding model "
            f"{meta.get('embedding_model')!r} (dim {meta.get('embedding_dim')}), but the configured "
            f"model is {model!r} (dim {dimension}). Set FACTSIEVE_EMBEDDING_MODEL to the index's "
            f"model, or build a new index version with `factsieve index new-version` and re-ingest."
        )
    return meta


# -- plain indexes: one template file, no components, no embedding (jobs, review, decisions) ------
def plain_index_bodies(template: str, alias: str, replicas: int, values: dict[str, Any] | None = None
                       ) -> tuple[str, dict[str, Any], str, dict[str, Any]]:
    """``(template name, template body, first index, its create body)`` of an index kind that is
    one ``index_templates/<template>.index_template.json`` and no components (pure). ``values``:
    its other placeholders (the posts index's ``model`` and ``dimension``)."""
    body = render(load_template(f"{template}.index_template"),
                  {**(values or {}), "alias": alias, "replicas": replicas})
    if template in rolling.ROLLING:  # a new write index each month (plugin.index.rolling)
        return (f"factsieve-{alias}", body, rolling.first_index(alias),
                {"aliases": {alias: {"is_write_index": True}}})
    return f"factsieve-{alias}", body, f"{alias}-v1", {"aliases": {alias: {}}}


def install_plain_index(store: Store, template: str, alias: str, replicas: int,
                        values: dict[str, Any] | None = None) -> str:
    """Install the template and create ``<alias>-v1`` behind the alias; idempotent (``factsieve
    init``; the admin identity on a secured cluster). An index made by an older version gets the
    fields added since (the mappings are strict). Returns the alias."""
    check_alias_name(alias)
    name, template_body, first, create = plain_index_bodies(template, alias, replicas, values)
    store.put_index_template(name, template_body)
    if not store.alias_indices(alias):
        store.create_index_if_missing(first, create)
    else:
        store.put_mapping(alias, {"properties": template_body["template"]["mappings"]["properties"]})
    return alias


def ensure_plain_index(store: Store, template: str, alias: str, replicas: int,
                       values: dict[str, Any] | None = None) -> None:
    """The alias present with every field of the current mapping. Writes only what is missing
    (``install_plain_index`` does it all), so the runtime identity of a secured cluster, which may
    not install anything, passes once ``factsieve init`` ran."""
    _, template_body, _, _ = plain_index_bodies(template, alias, replicas, values)
    if not store.alias_indices(alias):
        install_plain_index(store, template, alias, replicas, values)
        return
    wanted = template_body["template"]["mappings"]["properties"]
    if set(wanted) - set(store.mapping_properties(alias)):  # made by an older version
        store.put_mapping(alias, {"properties": wanted})
