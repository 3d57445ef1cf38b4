"""The evidence store on the real OpenSearch: ingestion reports, updates in place, and the two
task rules (nothing from the claim date on, never the claim's own fact-check) in every retriever."""
import json
import uuid
from datetime import date

import pytest

from plugin.evidence import (EvidenceQuery, EvidenceRetriever, ensure_evidence_index,
                             ingest_evidence, read_evidence)
from plugin.evidence.urls import url_key
from plugin.search.retrieval import RetrievalConfig
from tests.conftest import FIXTURES

pytestmark = pytest.mark.integration

DOCS = FIXTURES / "evidence" / "documents.jsonl"
KS = FIXTURES / "evidence" / "averitec_ks.jsonl"
CLAIM = "Lakeside council banned electric scooters"
CLAIM_DATE = date(2020, 10, 31)
#: the claim's own fact-check, as AVeriTeC gives it: Wayback-wrapped
OWN_FACTCHECK = ("https://web.archive.org/web/20201102000000/"
                 "https://www.factcheckers.example/2020/10/30/lakeside-scooter-ban-claim")
#: the default evidence hybrid, and each of its sub-queries on its own
CONFIGS = [None,
           RetrievalConfig.model_validate({"name": "bm25-only", "retrievers": [{"kind": "bm25"}]}),
           RetrievalConfig.model_validate({"name": "dense-only", "retrievers": [{"kind": "dense"}]})]


def load(store, embedder, settings, alias, *paths, claim_id=None):
    ensure_evidence_index(store, settings, embedder, alias)
    return ingest_evidence(read_evidence(list(paths), claim_id=claim_id), store=store,
                           embedder=embedder, index=alias, batch_size=8)


@pytest.fixture(scope="module")
def evidence_alias(store, embedder, settings):
    alias = f"fs-test-evidence-{uuid.uuid4().hex[:8]}"
    report = load(store, embedder, settings, alias, DOCS)
    assert report.documents == 6, report.rejects
    load(store, embedder, settings, alias, KS, claim_id="ks-1")
    load(store, embedder, settings, alias, DOCS, claim_id="ks-2")  # the same pages, another claim
    yield alias
    store.delete_index(f"{alias}-v*")
    store.delete_index_template(f"factsieve-{alias}")


def search(store, embedder, settings, alias, config=None, **kw):
    retriever = EvidenceRetriever(store, embedder, settings, alias=alias, config=config, max_per_url=5)
    return retriever.search(EvidenceQuery(text=kw.pop("text", CLAIM), k=kw.pop("k", 50), **kw)).passages


def test_ingest_reports_passages_and_rejects_with_reasons(store, embedder, settings, make_alias):
    alias = make_alias()
    report = load(store, embedder, settings, alias, DOCS, KS)
    assert report.documents == 8
    assert report.indexed == store.count(alias) > report.documents  # the long report: several
    assert (report.updated, report.removed) == (0, 0)
    reasons = {r["record"]: r["reason"] for r in report.rejects}
    assert report.rejected == 6 and set(reasons) == {
        "documents.jsonl:7", "documents.jsonl:8", "documents.jsonl:9", "documents.jsonl:10",
        "averitec_ks.jsonl:3", "averitec_ks.jsonl:4"}
    assert reasons["documents.jsonl:7"].startswith("line 7: not JSON")
    assert reasons["documents.jsonl:8"] == "line 8: no url"
    assert "not an http(s) URL" in reasons["documents.jsonl:9"]
    assert "no text" in reasons["documents.jsonl:10"]
    assert reasons["averitec_ks.jsonl:4"] == "line 4: no url"

    hits = store.search(alias, {"size": 50, "query": {"term": {"source": "averitec-ks"}},
                                "sort": [{"position": "asc"}]})["hits"]["hits"]
    report_pages = [h["_source"] for h in hits if h["_source"]["domain"] == "transport.lakeside.example"]
    assert [p["position"] for p in report_pages] == list(range(len(report_pages)))
    assert len(report_pages) > 1 and "embedding" not in report_pages[0]
    wrapped = next(h["_source"] for h in hits if h["_source"]["domain"] == "cycling-weekly.example")
    assert wrapped["url_key"] == "cycling-weekly.example/lakeside-speed-limit"


def test_reingest_updates_in_place_and_removes_left_over_passages(store, embedder, settings,
                                                                  make_alias, tmp_path):
    alias = make_alias()
    first = load(store, embedder, settings, alias, KS)
    count = store.count(alias)
    second = load(store, embedder, settings, alias, KS)
    assert (second.indexed, second.updated, second.removed) == (0, first.indexed, 0)
    assert store.count(alias) == count

    # the long report shrinks to two sentences: one passage, its old passages 1… are deleted
    ks = [json.loads(line) for line in KS.read_text(encoding="utf-8").splitlines()[:2]]
    old_passages = first.indexed - 1
    ks[0]["url2text"] = ["The report was withdrawn.", "A new one is due in spring."]
    path = tmp_path / "ks.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in ks) + "\n", encoding="utf-8")
    third = load(store, embedder, settings, alias, path)
    assert (third.indexed, third.updated, third.removed) == (0, 2, old_passages - 1)
    assert store.count(alias) == 2
    texts = [h["_source"]["text"] for h in store.search(alias, {"query": {"match_all": {}}})["hits"]["hits"]]
    assert "The report was withdrawn. A new one is due in spring." in texts


@pytest.mark.parametrize("config", CONFIGS, ids=["hybrid", "bm25", "dense"])
def test_nothing_from_the_claim_date_on_is_returned(store, embedder, settings, evidence_alias, config):
    unrestricted = search(store, embedder, settings, evidence_alias, config)
    dates = {p["published_at"] for p in unrestricted}
    assert {"2020-11-20", "2020-10-31"} <= dates  # they match the claim well: the filter matters
    found = search(store, embedder, settings, evidence_alias, config, before=CLAIM_DATE)
    assert found
    assert all(p["published_at"] is None or p["published_at"][:10] < "2020-10-31" for p in found)
    assert any(p["published_at"] is None for p in found)  # undated passages kept by default
    strict = search(store, embedder, settings, evidence_alias, config, before=CLAIM_DATE, strict_dates=True)
    assert strict and all(p["published_at"] and p["published_at"][:10] < "2020-10-31" for p in strict)


@pytest.mark.parametrize("config", CONFIGS, ids=["hybrid", "bm25", "dense"])
def test_excluded_url_and_domain_are_never_returned(store, embedder, settings, evidence_alias, config):
    own = url_key(OWN_FACTCHECK)
    everything = search(store, embedder, settings, evidence_alias, config)
    assert own in {url_key(p["url"]) for p in everything}
    assert "blog.factcheckers.example" in {p["domain"] for p in everything}

    by_url = search(store, embedder, settings, evidence_alias, config, exclude_urls=(OWN_FACTCHECK,))
    assert by_url and own not in {url_key(p["url"]) for p in by_url}
    assert "blog.factcheckers.example" in {p["domain"] for p in by_url}  # only that page went

    by_domain = search(store, embedder, settings, evidence_alias, config,
                       exclude_domains=("www.factcheckers.example",))
    assert by_domain and not any(p["domain"].endswith("factcheckers.example") for p in by_domain)


def test_hybrid_result_shape_ranks_and_diversity(store, embedder, settings, evidence_alias):
    retriever = EvidenceRetriever(store, embedder, settings, alias=evidence_alias)
    result = retriever.search(EvidenceQuery(text="scooter speed limit in the old town", k=5,
                                            before=CLAIM_DATE, exclude_urls=(OWN_FACTCHECK,)))
    passages = result.passages
    assert [p["rank"] for p in passages] == [1, 2, 3, 4, 5]
    assert all(a["score"] >= b["score"] for a, b in zip(passages, passages[1:]))
    assert {"id", "url", "title", "text", "published_at", "score", "rank", "explain"} <= set(passages[0])
    per_page = {}
    for p in passages:
        per_page[url_key(p["url"])] = per_page.get(url_key(p["url"]), 0) + 1
    assert max(per_page.values()) <= 2  # at most two passages of one page by default
    assert any("15 km/h" in p["text"] for p in passages[:3])
    assert result.to_dict()["config"] == "evidence-hybrid"


def test_claim_id_restricts_to_that_knowledge_store(store, embedder, settings, evidence_alias):
    for claim in ("ks-1", "ks-2"):
        found = search(store, embedder, settings, evidence_alias, claim_id=claim)
        assert found and {p["claim_id"] for p in found} == {claim}
    assert search(store, embedder, settings, evidence_alias, claim_id="nope") == []


def test_a_page_in_two_claims_stores_is_one_result(store, embedder, settings, evidence_alias):
    found = search(store, embedder, settings, evidence_alias)
    keys = [(url_key(p["url"]), p["position"]) for p in found]
    assert len(keys) == len(set(keys))
    assert store.count(evidence_alias) > len(found)  # the copies are there, just not twice


def test_missing_evidence_index_says_how_to_make_one(store, embedder, settings):
    from plugin.errors import NotFound

    retriever = EvidenceRetriever(store, embedder, settings, alias=f"fs-test-none-{uuid.uuid4().hex[:8]}")
    with pytest.raises(NotFound, match="ingest-evidence"):
        retriever.search(EvidenceQuery(text=CLAIM))
