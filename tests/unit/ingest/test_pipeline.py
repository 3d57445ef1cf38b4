"""The ingestion pipeline's pure parts."""
import pytest
from pydantic import ValidationError

from plugin.ingest.pipeline import IngestReport, MAX_REPORTED_REJECTS, embed_factchecks, passage_texts, validate, validation_reason
from plugin.ingest.formats import RawRecord
from plugin.models import FactCheck
from tests.stub_embedder import StubEmbedder




def stub_embedder():
    return StubEmbedder(passage=lambda t: [1.0, 0.0] if "\n" not in t else [0.0, 1.0], dim=2)


def test_passage_texts():
    assert passage_texts(FactCheck(claim="c")) == ["c"]
    assert passage_texts(FactCheck(claim="Claim", title="claim")) == ["Claim"]
    assert passage_texts(FactCheck(claim="c", title="t")) == ["c", "t\nc"]


def test_embed_factchecks_averages_and_normalises():
    vecs = embed_factchecks(stub_embedder(), [FactCheck(claim="c"), FactCheck(claim="c", title="t")])
    assert vecs.shape == (2, 2)
    assert vecs[0] == pytest.approx([1.0, 0.0])
    assert vecs[1] == pytest.approx([2 ** -0.5, 2 ** -0.5])


def test_validate_reports_and_detects_language():
    report = IngestReport()
    records = [RawRecord("f:1", {"claim": "Las vacunas contra el coronavirus alteran el ADN humano"}),
               RawRecord("f:2", None, "line 2: invalid JSON"),
               RawRecord("f:3", {"claim": "x", "date": "nope"})]
    good = list(validate(records, report))
    assert [(ref, fc.lang) for ref, fc in good] == [("f:1", "es")]
    assert report.rejected == 2
    assert report.rejects[0] == {"record": "f:2", "reason": "line 2: invalid JSON"}
    assert report.rejects[1]["reason"].startswith("published_at:")


def test_validation_reason_names_fields():
    with pytest.raises(ValidationError) as err:
        FactCheck.model_validate({"claim": "", "url": "ftp://x"})
    reason = validation_reason(err.value)
    assert "claim:" in reason and "url:" in reason


def test_report_caps_listed_rejects_but_counts_all():
    report = IngestReport()
    for i in range(MAX_REPORTED_REJECTS + 5):
        report.reject(f"r{i}", "bad")
    assert report.rejected == MAX_REPORTED_REJECTS + 5
    assert len(report.rejects) == MAX_REPORTED_REJECTS
