"""Templates, versioned indexes, aliases and the model guard, on the real OpenSearch."""
import warnings

import pytest
from opensearchpy.exceptions import OpenSearchWarning

from plugin.errors import BackendUnavailable, BadInput, ModelMismatch
from plugin.search.matcher import Matcher, MatchRequest
from plugin.settings import Settings
from plugin.index.store import Store
from plugin.index.templates import (IndexSpec, create_version, current_index, ensure_index,
                              index_model, switch_alias)

pytestmark = pytest.mark.integration


def test_ensure_index_is_idempotent_and_records_model(store, make_alias):
    alias = make_alias()
    spec = IndexSpec(alias=alias, model="some/model", dimension=8)
    first = ensure_index(store, spec)
    second = ensure_index(store, spec)
    assert first == second == f"{alias}-v1"
    assert index_model(store, alias) == {"index": first, "schema_version": 1,
                                         "embedding_model": "some/model", "embedding_dim": 8}
    mapping = store.client.indices.get_mapping(index=first)[first]["mappings"]["properties"]
    assert mapping["embedding"]["method"]["engine"] == "lucene"
    assert mapping["embedding"]["dimension"] == 8
    assert mapping["claim_i18n"]["properties"]["es"]["analyzer"] == "fs_es"
    settings = store.client.indices.get_settings(index=first)[first]["settings"]["index"]
    assert settings["knn"] == "true"
    source = store.client.indices.get_mapping(index=first)[first]["mappings"]["_source"]
    assert source == {"excludes": ["embedding"]}


def test_vector_is_searchable_but_not_in_source_and_reads_back_from_doc_values(store, make_alias):
    from plugin.lab.bench import base_documents
    from plugin.search.queries import knn_query, read_candidates

    alias = make_alias()
    ensure_index(store, IndexSpec(alias=alias, model="m", dimension=3))
    for i, vec in enumerate(([1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.6, 0.8, 0.0])):
        store.put(alias, f"d{i}", {"id": f"d{i}", "claim": f"claim {i}", "lang": "en", "embedding": vec})
    store.refresh(alias)
    assert "embedding" not in store.get(alias, "d2")
    raw = store.client.get(index=alias, id="d2")["_source"]
    assert "embedding" not in raw and raw["claim"] == "claim 2"
    hits = read_candidates(store.search(alias, knn_query([0.6, 0.8, 0.0], filters=None, size=2)), "q")
    assert [h.id for h in hits] == ["d2", "d1"] and hits[0].source == {"id": "d2", "lang": "en"}
    docs = {d["id"]: d for d in base_documents(store, alias)}
    # each document its own vector (the doc-values reader reuses one buffer across documents)
    assert docs["d0"]["embedding"] == pytest.approx([1.0, 0.0, 0.0])
    assert docs["d1"]["embedding"] == pytest.approx([0.0, 1.0, 0.0])
    assert docs["d2"]["embedding"] == pytest.approx([0.6, 0.8, 0.0])
    assert docs["d2"]["claim"] == "claim 2"


def test_force_merge_leaves_one_segment(store, make_alias):
    alias = make_alias()
    ensure_index(store, IndexSpec(alias=alias, model="m", dimension=3))
    for i in range(3):  # three refreshes: three segments
        store.put(alias, f"d{i}", {"id": f"d{i}", "claim": "c", "embedding": [1.0, float(i), 0.0]},
                  refresh=True)
    assert store.segment_count(alias) == 3
    store.force_merge(alias, lease_timeout_s=0, poll_s=0.1)  # no lease to wait for here
    assert store.segment_count(alias) == 1 and store.count(alias) == 3
    # sent once, as a task the client polled (its record is kept in .tasks): never re-sent
    names = {alias, *store.alias_indices(alias)}
    with warnings.catch_warnings():  # OpenSearch warns that .tasks is a system index: read it anyway
        warnings.simplefilter("ignore", OpenSearchWarning)
        store.client.indices.refresh(index=".tasks")
        records = store.client.search(index=".tasks", body={"size": 1000})["hits"]["hits"]
    merges = [h["_source"] for h in records if h["_source"]["task"]["action"] == "indices:admin/forcemerge"
              and any(f"[{n}]" in h["_source"]["task"]["description"] for n in names)]
    assert len(merges) == 1 and merges[0]["completed"] is True


def test_waiting_for_a_task_that_is_not_there_says_so(store):
    from plugin.errors import NotFound

    with pytest.raises(NotFound, match="force merge x .task"):
        store.wait_for_task("nonode:12345", what="force merge x")


def test_language_analyzers_are_installed(store, make_alias):
    alias = make_alias()
    index = ensure_index(store, IndexSpec(alias=alias, model="m", dimension=4))
    for analyzer, text, token in [("fs_en", "running vaccines", "vaccin"),
                                  ("fs_es", "las vacunas", "vacun"),
                                  ("fs_ko", "백신접종", "백신"),
                                  ("fs_neutral", "Vacunación", "vacunacion")]:
        out = store.client.indices.analyze(index=index, body={"analyzer": analyzer, "text": text})
        assert token in [t["token"] for t in out["tokens"]], (analyzer, out)


def test_new_version_and_alias_switch(store, make_alias):
    alias = make_alias()
    old = ensure_index(store, IndexSpec(alias=alias, model="model-a", dimension=4))
    new = create_version(store, IndexSpec(alias=alias, model="model-b", dimension=6), point_alias=False)
    assert new == f"{alias}-v2"
    assert current_index(store, alias) == old  # nothing moves until the switch
    switch_alias(store, alias, new)
    assert current_index(store, alias) == new
    assert index_model(store, alias)["embedding_model"] == "model-b"
    assert store.index_exists(old)  # never deleted


def test_query_with_another_model_is_refused(store, embedder, make_alias, settings):
    alias = make_alias()
    ensure_index(store, IndexSpec(alias=alias, model="intfloat/multilingual-e5-base", dimension=768))
    matcher = Matcher(store, embedder, settings, alias=alias)
    with pytest.raises(ModelMismatch, match="multilingual-e5-base"):
        matcher.match(MatchRequest(text="vaccines alter DNA"))
    with pytest.raises(ModelMismatch):
        ensure_index(store, IndexSpec(alias=alias, model=embedder.name, dimension=embedder.dim))


def test_concrete_index_in_place_of_alias_is_refused(store, make_alias):
    alias = make_alias()
    store.create_index(f"{alias}-v", {})  # a stray concrete index named like an alias' prefix
    store.create_index(alias, {})
    try:
        with pytest.raises(BadInput, match="not an alias"):
            ensure_index(store, IndexSpec(alias=alias, model="m", dimension=4))
    finally:
        store.delete_index(alias)
        store.delete_index(f"{alias}-v")


def test_unreachable_opensearch_names_the_url():
    store = Store(Settings(opensearch_url="http://127.0.0.1:9", opensearch_timeout_s=2))
    assert store.ping() is False
    with pytest.raises(BackendUnavailable, match=r"127\.0\.0\.1:9.*make up"):
        store.alias_indices("factchecks")
