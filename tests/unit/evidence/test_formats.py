"""Evidence readers: both layouts, line by line, bad lines as rejects with reasons."""
import io
import json
from datetime import date

import pytest

from plugin.evidence import formats
from plugin.evidence.formats import EvidenceDocument, parse, read_evidence, to_document
from tests.conftest import FIXTURES

DOCS = FIXTURES / "evidence" / "documents.jsonl"
KS = FIXTURES / "evidence" / "averitec_ks.jsonl"


def line(obj) -> bytes:
    return (json.dumps(obj) + "\n").encode()


def outcomes(records):
    """``{ref: document or reason}``."""
    out = {}
    for raw in records:
        doc = to_document(raw)
        out[raw.ref] = doc
    return out


def test_a_generator_source_is_read_one_line_at_a_time():
    pulled = []

    def source():
        for obj in ({"url": "https://a.example/1", "text": "One."},
                    {"url": "https://a.example/2", "text": "Two."}):
            pulled.append(obj["url"])
            yield line(obj)

    records = parse(source(), "gen")
    first = next(records)
    assert first.ref == "gen:1" and pulled == ["https://a.example/1"]  # nothing read ahead
    assert [r.ref for r in records] == ["gen:2"]


def test_text_lines_are_read_too():
    [raw] = parse(['{"url": "https://a.example/x", "text": "Hello."}\n'], "body")
    assert to_document(raw).text == "Hello."


@pytest.mark.parametrize("raw, reason", [
    (b"{not json\n", "line 1: not JSON"),
    (b"[1, 2]\n", "line 1: expected a JSON object, got an array"),
    (line({"title": "t", "text": "x"}), "line 1: no url"),
    (line({"url": "  ", "text": "x"}), "line 1: no url"),
    (line({"url": "https://a.example", "url2text": "one string"}),
     "line 1: url2text must be a list of sentences, got a string"),
    (b"\xff\xfe{}\n", "line 1: not UTF-8 text (byte 0)"),
])
def test_bad_lines_are_rejects_with_their_line(raw, reason):
    [record] = parse([raw], "f.jsonl")
    assert record.ref == "f.jsonl:1" and record.error is not None
    assert record.error.startswith(reason)


@pytest.mark.parametrize("obj, reason", [
    ({"url": "ftp://a.example/x", "text": "x"}, "url: not an http(s) URL"),
    ({"url": "https://a.example", "text": "  "}, "no text"),
    ({"url": "https://a.example", "url2text": []}, "no text"),
    ({"url": "https://a.example", "text": "x", "date": "2020-02-31"}, "published_at: not an ISO date"),
    ({"url": "https://a.example", "text": "x", "lang": "english!"}, "lang: not a language code"),
    ({"url": "https://a.example/" + "x" * 8000, "text": "x"}, "url: String should have at most 8000"),
])
def test_invalid_documents_are_rejected_by_the_one_rule(obj, reason):
    [raw] = parse([line(obj)], "f")
    result = to_document(raw)
    assert isinstance(result, str) and reason in result


def test_document_layout_fields_synonyms_and_extra():
    [raw] = parse([line({"url": "https://www.a.example/x", "Title": "T", "content": "Body.",
                         "date": "2020-10-30T09:00:00Z", "language": "en-GB", "publisher": "P",
                         "extra": {"k": 1}})], "f")
    doc = to_document(raw)
    assert isinstance(doc, EvidenceDocument)
    assert (doc.title, doc.text, doc.published_at, doc.lang, doc.domain, doc.source) == (
        "T", "Body.", date(2020, 10, 30), "en", "a.example", "jsonl")
    assert doc.extra == {"k": 1, "publisher": "P"}
    assert doc.content == "Body."


def test_averitec_layout_is_detected_per_line():
    raws = list(parse([line({"url": "https://a.example/1", "url2text": ["S1.", None, "S2."],
                             "type": "html", "query": "q"}),
                       line({"url": "https://a.example/2", "text": "Plain."})], "ks", claim_id="7"))
    ks, plain = (to_document(r) for r in raws)
    assert ks.source == "averitec-ks" and ks.content == ["S1.", "S2."]
    assert ks.extra == {"type": "html", "query": "q"} and ks.claim_id == "7"
    assert plain.source == "jsonl" and plain.content == "Plain."


def test_a_line_naming_its_claim_keeps_it_and_numbers_become_strings():
    [raw] = parse([line({"url": "https://a.example", "text": "x", "claim_id": 12})], "f", claim_id="9")
    assert to_document(raw).claim_id == "12"


def test_ids_are_stable_and_scoped_by_claim():
    a = EvidenceDocument(url="https://www.a.example/x/", text="t")
    b = EvidenceDocument(url="http://a.example/x", text="other text")
    c = EvidenceDocument(url="https://a.example/x", text="t", claim_id="1")
    assert a.doc_id == b.doc_id != c.doc_id  # the same page, however spelled; per claim otherwise
    assert a.passage_id(0) == b.passage_id(0) != a.passage_id(1)
    assert len(a.doc_id) == len(a.passage_id(0)) == 20


def test_blank_lines_are_skipped_but_counted():
    refs = [r.ref for r in parse([b"\n", b"  \n", line({"url": "https://a.example", "text": "x"})], "f")]
    assert refs == ["f:3"]


def test_overlong_line_is_rejected_without_holding_it(monkeypatch):
    monkeypatch.setattr(formats, "MAX_LINE_BYTES", 64)
    monkeypatch.setattr(formats, "_READ_CHUNK", 16)
    big = line({"url": "https://a.example/big", "text": "x" * 500})
    ok = line({"url": "https://a.example/ok", "text": "y"})
    records = list(parse(io.BytesIO(big + ok), "f"))
    assert [(r.ref, r.error) for r in records] == [("f:1", "line 1: longer than 64 bytes"), ("f:2", None)]


def test_fixture_files(tmp_path):
    got = outcomes(read_evidence([DOCS, KS, tmp_path / "missing.jsonl"]))
    rejects = {ref: why for ref, why in got.items() if isinstance(why, str)}
    assert rejects.keys() == {"documents.jsonl:7", "documents.jsonl:8", "documents.jsonl:9",
                              "documents.jsonl:10", "averitec_ks.jsonl:3", "averitec_ks.jsonl:4",
                              str(tmp_path / "missing.jsonl")}
    assert rejects["documents.jsonl:7"].startswith("line 7: not JSON")
    assert rejects["documents.jsonl:8"] == "line 8: no url"
    assert rejects[str(tmp_path / "missing.jsonl")] == "no such file"
    assert got["documents.jsonl:2"].published_at == date(2020, 11, 20)
    assert got["averitec_ks.jsonl:2"].domain == "cycling-weekly.example"
