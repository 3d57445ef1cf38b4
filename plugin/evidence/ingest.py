"""Evidence ingestion: validate each document, split it into passages, embed, bulk-index, report.

Streams end to end: records are read lazily, passages are embedded ``batch_size`` at a time and
handed to ``Store.bulk`` as they are made, so memory holds one batch, not the file. The report
counts passages (the documents the index holds) and documents read; a bad document is rejected
with its reference and reason and the others go on. Passage ids are stable (URL, claim, position),
so re-ingesting updates in place; when a document now has fewer passages than before, its
left-over passages are deleted (``removed``), so an update never leaves stale text behind.
"""
from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from plugin.embedding import Embedder
from plugin.evidence.caps import document_cap_reason
from plugin.evidence.formats import EvidenceDocument, to_document
from plugin.evidence.passages import MAX_WORDS, OVERLAP_SENTENCES, embedding_text, split_document
from plugin.evidence.urls import parent_domains, url_key
from plugin.index.bodies import ANALYZED_LANGS
from plugin.index.store import Store
from plugin.ingest.formats import RawRecord
from plugin import owners
from plugin.owners import DEFAULT_TENANT, Writer
from plugin.ingest.pipeline import IngestReport
from plugin.lang import detect_language

#: Characters of a document the language detector reads (enough, and bounded for huge pages).
LANG_SAMPLE_CHARS = 2000
#: Updated documents whose left-over passages are looked up together (one scroll, one bulk).
CLEANUP_BATCH = 200


@dataclass
class EvidenceReport(IngestReport):
    """``IngestReport`` counting passages (``indexed``/``updated``; ``rejected`` counts documents
    and passages refused), plus the documents read and the stale passages removed."""

    documents: int = 0
    removed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"documents": self.documents, **super().to_dict(), "removed": self.removed}


@dataclass(frozen=True)
class PassageDoc:
    """One passage ready to index: its ids, what the embedding sees, and its ``_source``."""

    id: str
    doc_id: str
    ref: str
    embed_text: str
    source: dict[str, Any]


def passage_docs(doc: EvidenceDocument, ref: str, *, now: str, max_words: int = MAX_WORDS,
                 overlap: int = OVERLAP_SENTENCES, owner: str = DEFAULT_TENANT) -> list[PassageDoc]:
    """The passages of one document as index documents (pure; no embedding yet), each recording
    the document's ``owner``."""
    texts = split_document(doc.content, max_words=max_words, overlap=overlap)
    lang = doc.lang or detect_language(" ".join(texts)[:LANG_SAMPLE_CHARS])
    common: dict[str, Any] = {
        "doc_id": doc.doc_id, "url": doc.url, "url_key": url_key(doc.url), "title": doc.title,
        "published_at": doc.published_at.isoformat() if doc.published_at else None,
        "domain": doc.domain, "domains": parent_domains(doc.domain), "lang": lang,
        "source": doc.source, "claim_id": doc.claim_id, "extra": doc.extra or None,
        "ingested_at": now, owners.FIELD: owner}
    common = {k: v for k, v in common.items() if v is not None}
    out = []
    for position, text in enumerate(texts):
        source = {"id": doc.passage_id(position), **common, "position": position, "text": text}
        if lang in ANALYZED_LANGS:
            source["text_i18n"] = {lang: text}
            if doc.title:
                source["title_i18n"] = {lang: doc.title}
        out.append(PassageDoc(id=source["id"], doc_id=doc.doc_id, ref=f"{ref} passage {position}",
                              embed_text=embedding_text(doc.title, text), source=source))
    return out


def stale_query(docs: dict[str, int]) -> dict[str, Any]:
    """Passages of the given documents at or past their new passage count (``{doc_id: n}``)."""
    return {"_source": False, "query": {"bool": {"should": [
        {"bool": {"filter": [{"term": {"doc_id": d}}, {"range": {"position": {"gte": n}}}]}}
        for d, n in sorted(docs.items())], "minimum_should_match": 1}}}


def bulk_outcome(ok: bool, info: dict[str, Any]) -> tuple[str, str]:
    """``(doc id, "created" | "updated" | reason)`` of one ``Store.bulk`` item."""
    item = next(iter(info.values()), {}) if info else {}
    doc_id = str(item.get("_id"))
    if ok:
        return doc_id, "created" if item.get("result") == "created" else "updated"
    err = item.get("error", {})
    return doc_id, err.get("reason", str(err)) if isinstance(err, dict) else str(err)


class _Tracker:
    """Which documents existed before (a passage came back ``updated``) and how many passages
    they have now: their passages past that count are stale."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.waiting: dict[str, int] = {}
        self.updated: set[str] = set()
        self.ready: dict[str, int] = {}

    def add(self, doc_id: str, n: int) -> None:
        """A document read with ``n`` passages. Read again (a page listed twice) before its
        clean-up ran, the clean-up waits for the later copy, which may have more passages."""
        if self.ready.pop(doc_id, None) is not None:
            self.updated.add(doc_id)
        self.counts[doc_id] = n
        self.waiting[doc_id] = self.waiting.get(doc_id, 0) + n

    def done(self, doc_id: str, updated: bool) -> None:
        if updated:
            self.updated.add(doc_id)
        self.waiting[doc_id] -= 1
        if self.waiting[doc_id] == 0:
            del self.waiting[doc_id]
            n = self.counts.pop(doc_id)
            if doc_id in self.updated:
                self.updated.discard(doc_id)
                self.ready[doc_id] = n

    def take(self) -> dict[str, int]:
        ready, self.ready = self.ready, {}
        return ready


def remove_stale(store: Store, index: str, docs: dict[str, int]) -> int:
    """Delete the passages of ``docs`` (``{doc_id: passage count now}``) past their new count;
    returns how many were deleted. Refreshes first, so passages indexed moments ago count."""
    if not docs:
        return 0
    store.refresh(index)
    hits = store.scan(index, stale_query(docs))
    deletes = ({"_op_type": "delete", "_index": h["_index"], "_id": h["_id"]} for h in hits)
    return sum(1 for ok, _ in store.bulk(deletes) if ok)


def ingest_evidence(records: Iterable[RawRecord], *, store: Store, embedder: Embedder, index: str,
                    batch_size: int = 64, refresh: bool = True, max_words: int = MAX_WORDS,
                    overlap: int = OVERLAP_SENTENCES,
                    progress: Callable[[int], None] | None = None,
                    max_passages_per_document: int | None = None,
                    writer: Writer = Writer()) -> EvidenceReport:
    """Ingest evidence records into ``index`` (an alias) as ``writer``; returns the per-passage
    report.

    Owners (``plugin.owners``) are per document: its passages record the owner, and a document
    whose first passage another tenant owns is rejected whole (one ``mget`` per ``batch_size``
    documents), never overwritten. The check precedes the write: two tenants writing the same
    new document at the same moment can both pass it, and the later write wins.

    ``batch_size`` passages are embedded per call. The caller checks the embedding model against
    the index first (``ensure_evidence_index``). ``progress`` is called with 1 per passage. A
    document of more than ``max_passages_per_document`` passages is rejected whole
    (``plugin.evidence.caps``, which callers that must refuse a request before writing use first).
    """
    report = EvidenceReport()
    now = datetime.now(timezone.utc).isoformat()
    tracker = _Tracker()
    #: passage id -> (ref, doc id) of each passage sent and not yet answered, in send order (a
    #: page listed twice in one file sends one id twice; bulk answers in order)
    in_flight: dict[str, deque[tuple[str, str]]] = {}

    def documents() -> Iterator[tuple[str, EvidenceDocument]]:
        for raw in records:
            doc = to_document(raw)
            if isinstance(doc, str):
                report.reject(raw.ref, doc)
                continue
            yield raw.ref, doc

    def passages() -> Iterator[PassageDoc]:
        stream = documents()
        while batch := list(itertools.islice(stream, batch_size)):
            firsts = sorted({doc.passage_id(0) for _, doc in batch})
            plans = owners.plan(firsts, owners.existing(
                store.mget(index, firsts, source=[owners.FIELD])), writer)
            for ref, doc in batch:
                write = plans[doc.passage_id(0)]
                if write is None:
                    report.reject(ref, owners.refusal("evidence document", doc.doc_id))
                    continue
                made = passage_docs(doc, ref, now=now, max_words=max_words, overlap=overlap,
                                    owner=write.owner)
                too_many = document_cap_reason(len(made), max_passages_per_document)
                if too_many is not None:
                    report.reject(ref, too_many)
                    continue
                report.documents += 1
                tracker.add(doc.doc_id, len(made))
                yield from made

    def actions() -> Iterator[dict[str, Any]]:
        stream = passages()
        while batch := list(itertools.islice(stream, batch_size)):
            vectors = embedder.encode_passages([p.embed_text for p in batch])
            for p, vec in zip(batch, vectors):
                in_flight.setdefault(p.id, deque()).append((p.ref, p.doc_id))
                yield {"_op_type": "index", "_index": index, "_id": p.id,
                       "_source": {**p.source, "embedding": [float(x) for x in vec]}}

    for ok, info in store.bulk(actions(), chunk_size=max(batch_size, 100)):
        passage_id, outcome = bulk_outcome(ok, info)
        queue = in_flight.get(passage_id)
        ref, doc_id = queue.popleft() if queue else (passage_id, None)
        if queue is not None and not queue:
            del in_flight[passage_id]
        if outcome == "created":
            report.indexed += 1
        elif outcome == "updated":
            report.updated += 1
        else:
            report.reject(ref, f"OpenSearch rejected passage {passage_id}: {outcome}")
        if doc_id is not None:
            tracker.done(doc_id, outcome == "updated")
        if len(tracker.ready) >= CLEANUP_BATCH:
            report.removed += remove_stale(store, index, tracker.take())
        if progress:
            progress(1)
    report.removed += remove_stale(store, index, tracker.take())
    if refresh:
        store.refresh(index)
    return report
