"""Passage caps on an evidence body, decided before anything is written."""
import json

import pytest

from plugin.errors import BadInput, ContentTooLarge, InvalidRequest
from plugin.evidence import parse
from plugin.evidence.caps import EvidencePlan, document_cap_reason, plan_evidence

#: 30 sentences of 6 words: 4 passages at max_words=60 (sentences 0-9, 9-18, 18-27, 27-29)
LONG = " ".join(f"Sentence {i} has exactly six words." for i in range(30))


def body(*lines: object) -> list[str]:
    return [line if isinstance(line, str) else json.dumps(line) for line in lines]


def plan(lines: list[str], per_document: int = 10, per_request: int = 100) -> EvidencePlan:
    return plan_evidence(parse(lines, "body"), per_document=per_document, per_request=per_request,
                         max_words=60)


def doc(n: int, text: str = "One short sentence.") -> dict:
    return {"url": f"https://docs.example.org/{n}", "text": text}


@pytest.mark.parametrize("passages, cap, rejected", [(5, 5, False), (6, 5, True), (1, None, False)])
def test_document_cap_reason(passages, cap, rejected):
    reason = document_cap_reason(passages, cap)
    assert (reason is not None) == rejected
    if rejected:
        assert f"{passages:,} passages" in reason and "FACTSIEVE_MAX_PASSAGES_PER_DOCUMENT" in reason


def test_plan_counts_documents_and_passages_and_lists_rejects():
    got = plan(body(doc(1), "not json", doc(2, LONG), {"url": "https://x.example/"}))
    assert (got.documents, got.passages) == (2, 1 + 4)
    assert [ref for ref, _ in got.rejects] == ["body:2", "body:4"]


def test_a_document_over_its_cap_is_rejected_alone():
    assert plan(body(doc(1), doc(2, LONG)), per_document=4).passages == 5
    got = plan(body(doc(1), doc(2, LONG)), per_document=3)
    assert (got.documents, got.passages) == (1, 1)
    assert got.rejects[0][0] == "body:2" and "4 passages" in got.rejects[0][1]


def test_a_request_over_its_cap_is_413_naming_it():
    assert plan(body(doc(1, LONG), doc(2, LONG)), per_request=8).passages == 8
    with pytest.raises(ContentTooLarge, match="FACTSIEVE_MAX_PASSAGES_PER_REQUEST") as err:
        plan(body(doc(1, LONG), doc(2, LONG), doc(3)), per_request=8)
    assert err.value.status == 413


def test_no_valid_document_is_422_with_each_reason_and_no_record_is_400():
    with pytest.raises(InvalidRequest) as err:
        plan(body("not json", {"url": "https://x.example/"}, doc(3, LONG)), per_document=3)
    assert err.value.status == 422 and "3 rejected" in err.value.detail
    assert [e["field"] for e in err.value.errors] == ["body:1", "body:2", "body:3"]
    assert "not JSON" in err.value.errors[0]["message"] and "no text" in err.value.errors[1]["message"]
    with pytest.raises(BadInput) as err:
        plan(body("", "  "))
    assert err.value.status == 400
