"""The evidence store: knowledge-store documents split into passages, for verification.

``formats`` reads JSON Lines and the AVeriTeC knowledge-store layout as a stream; ``passages``
splits documents into overlapping passages; ``ingest`` embeds and indexes them; ``retrieve``
finds passages for a claim or question with hybrid BM25 + kNN, only from before the claim date
and never from the claim's own fact-check. ``index`` builds the versioned ``evidence`` alias.
"""
from plugin.evidence.formats import EvidenceDocument, parse, read_evidence, to_document
from plugin.evidence.index import ensure_evidence_index, evidence_spec
from plugin.evidence.ingest import EvidenceReport, ingest_evidence
from plugin.evidence.passages import embedding_text, passages, split_document, split_sentences
from plugin.evidence.retrieve import EvidenceQuery, EvidenceResult, EvidenceRetriever

__all__ = ["EvidenceDocument", "EvidenceQuery", "EvidenceReport", "EvidenceResult",
           "EvidenceRetriever", "embedding_text", "ensure_evidence_index", "evidence_spec",
           "ingest_evidence", "parse", "passages", "read_evidence", "split_document",
           "split_sentences", "to_document"]
