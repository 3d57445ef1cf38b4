"""The pure parts of evidence ingestion: passage documents, stale-passage queries, outcomes."""
from datetime import date

from plugin.evidence.formats import EvidenceDocument
from plugin.evidence.ingest import EvidenceReport, _Tracker, bulk_outcome, passage_docs, stale_query

NOW = "2024-01-01T00:00:00+00:00"


def test_passage_docs_fields_and_ids():
    doc = EvidenceDocument(url="https://web.archive.org/web/2020/https://www.news.bbc.co.uk/a/",
                           title="Scooter ban", lang="en", published_at=date(2020, 10, 1),
                           sentences=[f"Sentence {i} has exactly six words." for i in range(40)],
                           claim_id="c1", extra={"type": "html"})
    made = passage_docs(doc, "ks.jsonl:3", now=NOW, max_words=60, overlap=1)
    assert len(made) == 5  # 40 sentences of 6 words, 10 per passage, one shared: 0-9, 9-18, …
    first = made[0].source
    assert first["position"] == 0 and made[-1].source["position"] == 4
    assert first["id"] == doc.passage_id(0) == made[0].id and made[0].doc_id == doc.doc_id
    assert first["url_key"] == "news.bbc.co.uk/a"
    assert first["domain"] == "news.bbc.co.uk"
    assert first["domains"] == ["news.bbc.co.uk", "bbc.co.uk", "co.uk"]
    assert first["published_at"] == "2020-10-01" and first["claim_id"] == "c1"
    assert first["text_i18n"] == {"en": first["text"]} and first["title_i18n"] == {"en": "Scooter ban"}
    assert first["extra"] == {"type": "html"} and first["source"] == "jsonl"
    assert made[1].ref == "ks.jsonl:3 passage 1"
    assert made[0].embed_text == "Scooter ban\n" + first["text"]
    assert "embedding" not in first


def test_undated_untitled_document_has_no_such_fields_and_language_is_detected():
    doc = EvidenceDocument(url="https://a.example/x", text="Las vacunas no alteran el ADN humano.")
    [p] = passage_docs(doc, "f:1", now=NOW)
    assert "published_at" not in p.source and "title" not in p.source and "title_i18n" not in p.source
    assert p.source["lang"] == "es" and p.source["text_i18n"] == {"es": p.source["text"]}


def test_stale_query_targets_positions_past_the_new_count():
    assert stale_query({"d2": 3, "d1": 1}) == {"_source": False, "query": {"bool": {"should": [
        {"bool": {"filter": [{"term": {"doc_id": "d1"}}, {"range": {"position": {"gte": 1}}}]}},
        {"bool": {"filter": [{"term": {"doc_id": "d2"}}, {"range": {"position": {"gte": 3}}}]}}],
        "minimum_should_match": 1}}}


def test_bulk_outcome():
    assert bulk_outcome(True, {"index": {"_id": "a", "result": "created"}}) == ("a", "created")
    assert bulk_outcome(True, {"index": {"_id": "a", "result": "updated"}}) == ("a", "updated")
    assert bulk_outcome(False, {"index": {"_id": "a", "error": {"reason": "mapper failed"}}}) == (
        "a", "mapper failed")


def test_tracker_reports_updated_documents_once_all_their_passages_answered():
    t = _Tracker()
    t.add("new", 2)
    t.add("old", 2)
    t.done("new", False)
    t.done("old", True)
    t.done("new", False)
    assert t.take() == {}
    t.done("old", False)
    assert t.take() == {"old": 2} and t.take() == {}


def test_tracker_same_document_twice_keeps_the_last_count():
    t = _Tracker()
    t.add("d", 3)
    t.add("d", 1)
    for updated in (False, False, False, True):
        t.done("d", updated)
    assert t.take() == {"d": 1}


def test_tracker_cleanup_waits_for_a_later_copy_of_the_same_document():
    t = _Tracker()
    t.add("d", 1)
    t.done("d", True)  # the first copy is answered: ready to clean past position 1 …
    t.add("d", 3)  # … but a second copy with three passages was read before the clean-up ran
    assert t.take() == {}
    for _ in range(3):
        t.done("d", False)
    assert t.take() == {"d": 3}


def test_report_dict():
    r = EvidenceReport(indexed=3, documents=2)
    r.reject("f:1", "line 1: no url")
    assert r.to_dict() == {"documents": 2, "indexed": 3, "updated": 0, "rejected": 1,
                           "rejects": [{"record": "f:1", "reason": "line 1: no url"}], "removed": 0}
