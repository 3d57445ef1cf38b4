"""Ingestion on the real OpenSearch: reports, rejects, idempotent re-ingest."""
import json

import pytest

from tests.conftest import ingest_files

pytestmark = pytest.mark.integration

GOOD = [
    {"id": "g1", "claim": "5G towers spread the coronavirus.", "lang": "en", "rating": "False",
     "url": "https://example.org/fc/5g", "date": "2020-04-02", "publisher": "Example Checks"},
    {"claim": "Las vacunas contra el COVID-19 alteran el ADN humano.", "rating": "Falso",
     "url": "https://example.org/fc/adn"},
    {"id": "g3", "claim": "Drinking hot water kills the virus.", "title": "No, hot water does not kill the virus"},
]


def write_jsonl(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_mixed_file_keeps_good_records_and_reports_bad_ones(store, embedder, make_alias, settings, tmp_path):
    alias = make_alias()
    lines = [json.dumps(GOOD[0]), "{not json", json.dumps({"id": "b1", "title": "no claim here"}),
             json.dumps(GOOD[1]), json.dumps({"id": "b2", "claim": "x", "date": "2020-02-31"}),
             json.dumps(GOOD[2])]
    report = ingest_files(store, embedder, alias, [write_jsonl(tmp_path / "feed.jsonl", lines)], settings)
    assert (report.indexed, report.updated, report.rejected) == (3, 0, 3)
    reasons = {r["record"]: r["reason"] for r in report.rejects}
    assert set(reasons) == {"feed.jsonl:2", "feed.jsonl:3", "feed.jsonl:5"}
    assert "claim" in reasons["feed.jsonl:3"]
    assert "published_at" in reasons["feed.jsonl:5"]
    assert store.count(alias) == 3

    doc = store.get(alias, "g1")
    assert doc["verdict"] == "Refuted" and doc["domain"] == "example.org"
    assert "embedding" not in doc
    # the Spanish record had no id and no lang: id from the URL hash, language detected
    hits = store.search(alias, {"query": {"term": {"url": GOOD[1]["url"]}}})["hits"]["hits"]
    assert hits[0]["_source"]["lang"] == "es"


def test_reingest_updates_instead_of_duplicating(store, embedder, make_alias, settings, tmp_path):
    alias = make_alias()
    path = write_jsonl(tmp_path / "feed.jsonl", [json.dumps(r) for r in GOOD])
    first = ingest_files(store, embedder, alias, [path], settings)
    second = ingest_files(store, embedder, alias, [path], settings)
    assert (first.indexed, first.updated) == (3, 0)
    assert (second.indexed, second.updated, second.rejected) == (0, 3, 0)
    assert store.count(alias) == 3


def test_missing_file_is_a_reject_not_an_abort(store, embedder, make_alias, settings, tmp_path):
    alias = make_alias()
    good = write_jsonl(tmp_path / "ok.jsonl", [json.dumps(GOOD[0])])
    report = ingest_files(store, embedder, alias, [tmp_path / "missing.jsonl", good], settings)
    assert report.indexed == 1 and report.rejected == 1
    assert "missing.jsonl" in report.rejects[0]["record"]


def test_overlong_id_is_rejected_alone(store, embedder, make_alias, settings, tmp_path):
    alias = make_alias()
    path = write_jsonl(tmp_path / "feed.jsonl", [json.dumps({"id": "x" * 600, "claim": "too long an id"}),
                                                 json.dumps(GOOD[0])])
    report = ingest_files(store, embedder, alias, [path], settings)
    assert (report.indexed, report.rejected) == (1, 1)
    assert report.rejects[0]["record"] == "feed.jsonl:1" and "512 bytes" in report.rejects[0]["reason"]


def test_opensearch_rejection_is_reported_per_record(store, embedder, make_alias, settings, tmp_path):
    from plugin.ingest import Format, ingest, read_records
    from plugin.index.templates import IndexSpec

    alias = make_alias()
    spec = IndexSpec(alias=alias, model=embedder.name, dimension=embedder.dim)
    # an index whose mapping makes 'claimant' a date: OpenSearch refuses that one document
    from plugin.index.templates import install_templates

    install_templates(store, spec)
    store.create_index(f"{alias}-v1", {"mappings": {"_meta": spec.meta(),
                                                    "properties": {"claimant": {"type": "date"}}},
                                       "aliases": {alias: {}}})
    rows = [dict(GOOD[0], claimant="Jane Doe"), GOOD[2]]
    path = write_jsonl(tmp_path / "feed.jsonl", [json.dumps(r) for r in rows])
    report = ingest(read_records([path], Format.jsonl), store=store, embedder=embedder, index=alias)
    assert (report.indexed, report.rejected) == (1, 1)
    assert report.rejects[0]["record"] == "feed.jsonl:1"
    assert "OpenSearch rejected id g1" in report.rejects[0]["reason"]
