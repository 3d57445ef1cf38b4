"""Caps on what one evidence request makes, decided before anything is written (pure).

Ingestion streams: a document is embedded and indexed as soon as it is read, so a limit found
half-way would leave half a request written and report a failure. The API and the evidence job
therefore hold the body (it is under the size limit) and ``plan_evidence`` it first: every
document validated and split into passages, counted, nothing embedded. A document that splits
into more than ``per_document`` passages is rejected on its own (``document_cap_reason``, the one
rule, which ``ingest_evidence`` applies as it reads); passages of the accepted documents past
``per_request`` refuse the whole request (413); a body with no acceptable document is a 422
listing each line's reason, as for fact-checks (``plugin.ingest.preflight``).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from plugin.errors import BadInput, ContentTooLarge, InvalidRequest
from plugin.evidence.formats import to_document
from plugin.evidence.passages import MAX_WORDS, OVERLAP_SENTENCES, split_document
from plugin.ingest.formats import RawRecord

#: Rejects a 422 lists at most (the count says how many there were).
MAX_LISTED = 100


def document_cap_reason(passages: int, cap: int | None) -> str | None:
    """Why a document of ``passages`` passages is rejected under ``cap``; ``None`` when it fits."""
    if cap is None or passages <= cap:
        return None
    return (f"the document splits into {passages:,} passages, more than the {cap:,} one document "
            "may make (FACTSIEVE_MAX_PASSAGES_PER_DOCUMENT): split it, or raise the limit")


@dataclass(frozen=True)
class EvidencePlan:
    """What a body would make: accepted documents and their passages, and the rejects (ref,
    reason) in body order."""

    documents: int
    passages: int
    rejects: tuple[tuple[str, str], ...] = ()


def plan_evidence(records: Iterable[RawRecord], *, per_document: int, per_request: int,
                  max_words: int = MAX_WORDS, overlap: int = OVERLAP_SENTENCES) -> EvidencePlan:
    """Count what ``records`` would make, refusing before any write: ``ContentTooLarge`` once the
    accepted documents pass ``per_request`` passages, ``InvalidRequest`` (422, each reject listed)
    when no document is acceptable, ``BadInput`` when there is no record at all."""
    documents = passages = 0
    rejects: list[tuple[str, str]] = []
    for raw in records:
        doc = to_document(raw)
        if isinstance(doc, str):
            rejects.append((raw.ref, doc))
            continue
        n = len(split_document(doc.content, max_words=max_words, overlap=overlap))
        reason = document_cap_reason(n, per_document)
        if reason is not None:
            rejects.append((raw.ref, reason))
            continue
        documents += 1
        passages += n
        if passages > per_request:
            raise ContentTooLarge(
                f"the documents in the body make more than {per_request:,} passages, the most one "
                "request may make (FACTSIEVE_MAX_PASSAGES_PER_REQUEST): send them in several "
                "requests; nothing was written")
    if not documents:
        if not rejects:
            raise BadInput("the body holds no evidence documents")
        raise InvalidRequest(
            f"no evidence document in the body is valid ({len(rejects)} rejected)",
            errors=[{"field": ref, "message": reason, "type": "record"}
                    for ref, reason in rejects[:MAX_LISTED]])
    return EvidencePlan(documents, passages, tuple(rejects))
