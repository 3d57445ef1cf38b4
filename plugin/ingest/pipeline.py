"""Ingestion: validate each record, embed in batches, bulk-index, report every outcome.

One bad record never stops the batch: parse errors, validation errors, an image that cannot be
read and per-document OpenSearch rejections all land in the report with the record's reference
and the reason.
Ids are stable (``plugin.models.stable_id``), so re-ingesting a file updates documents instead of
duplicating them.
"""
from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import ValidationError

from plugin.embedding import Embedder
from plugin.errors import BadInput
from plugin.lang import detect_language
from plugin.models import FactCheck
from plugin.index.bodies import ANALYZED_LANGS
from plugin.index.store import Store
from plugin.ingest.formats import RawRecord
from plugin import owners
from plugin.owners import Write, Writer

if TYPE_CHECKING:
    from plugin.ingest.images import ImageStep

log = logging.getLogger(__name__)

#: Reported rejects are capped so that a wholly bad 1M-line file cannot exhaust memory; the
#: ``rejected`` count stays exact.
MAX_REPORTED_REJECTS = 1000


@dataclass
class IngestReport:
    indexed: int = 0
    updated: int = 0
    rejected: int = 0
    rejects: list[dict[str, str]] = field(default_factory=list)

    def reject(self, record: str, reason: str) -> None:
        self.rejected += 1
        if len(self.rejects) < MAX_REPORTED_REJECTS:
            self.rejects.append({"record": record, "reason": reason})

    def to_dict(self) -> dict[str, Any]:
        return {"indexed": self.indexed, "updated": self.updated, "rejected": self.rejected,
                "rejects": self.rejects}


def validation_reason(exc: ValidationError) -> str:
    """A one-line reason naming each offending field, e.g. ``published_at: not an ISO date``."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "record"
        msg = err["msg"].removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}")
    return "; ".join(parts)


def passage_texts(fc: FactCheck) -> list[str]:
    """What the passage embedding sees: the claim alone and, when the title adds words, the
    title with the claim. ``embed_factchecks`` averages the two.

    The title carries the fact-checker's framing, the claim its exact wording: their average
    matched better than either alone (docs/design/measurements.md).
    """
    if fc.title and fc.title.strip().lower() != fc.claim.strip().lower():
        return [fc.claim, f"{fc.title}\n{fc.claim}"]
    return [fc.claim]


def embed_factchecks(embedder: Embedder, factchecks: list[FactCheck]) -> np.ndarray:
    """One L2-normalised vector per fact-check (the mean of its passage texts), in one batch."""
    texts: list[str] = []
    spans: list[tuple[int, int]] = []
    for fc in factchecks:
        parts = passage_texts(fc)
        spans.append((len(texts), len(texts) + len(parts)))
        texts.extend(parts)
    vectors = embedder.encode_passages(texts)
    out = np.stack([vectors[a:b].mean(axis=0) for a, b in spans]) if spans else vectors
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return (out / np.where(norms == 0, 1, norms)).astype("float32")


def to_document(fc: FactCheck, vector: Any | None, now: str,
                image: dict[str, Any] | None = None) -> dict[str, Any]:
    """The indexed document; without a ``vector`` it is left to the index's default ingest
    pipeline (the hosted model, ``plugin.index.hosted``) to embed. ``image``: what the image
    stage read from the fact-check's image (``ImageAnalysis.to_source``)."""
    doc = fc.to_source()
    if image is not None:
        doc["image"] = image
    if fc.lang in ANALYZED_LANGS:
        doc["claim_i18n"] = {fc.lang: fc.claim}
        if fc.title:
            doc["title_i18n"] = {fc.lang: fc.title}
    if fc.extra:
        doc["extra"] = fc.extra
    if vector is not None:
        doc["embedding"] = [float(x) for x in vector]
    doc["ingested_at"] = now
    return doc


def to_factcheck(raw: RawRecord) -> FactCheck | str:
    """The record as a ``FactCheck``, or the one-line reason it is rejected: the single rule for
    what a valid record is, shared by ``validate`` and the API's preflight."""
    if raw.error is not None or raw.data is None:
        return raw.error or "empty record"
    try:
        return FactCheck.model_validate(raw.data)
    except ValidationError as exc:
        return validation_reason(exc)
    except (ArithmeticError, TypeError, ValueError, RecursionError) as exc:
        # a validator that raised outside pydantic's net is still this record's problem only
        return f"invalid record: {type(exc).__name__}: {str(exc)[:200]}"


def validate(records: Iterable[RawRecord], report: IngestReport) -> Iterator[tuple[str, FactCheck]]:
    """Yield ``(ref, FactCheck)`` for good records; report the bad ones."""
    for raw in records:
        fc = to_factcheck(raw)
        if isinstance(fc, str):
            report.reject(raw.ref, fc)
            continue
        if fc.lang is None:
            fc.lang = detect_language(fc.claim)
        yield raw.ref, fc


#: Images read at once by one ingest (fetching an image_url mostly waits on its server); records
#: still come out in their input order.
IMAGE_THREADS = 4


def _read_image(images: ImageStep, fc: FactCheck) -> tuple[dict[str, Any] | None, str | None]:
    """``(stored image, None)``, or ``(None, the reason the record is rejected)``."""
    try:
        return images(fc).to_source(), None
    except BadInput as exc:  # ContentTooLarge and UnsupportedContentType too
        return None, f"image: {exc.detail}"


def read_images(items: Iterable[tuple[str, FactCheck]], images: ImageStep | None,
                report: IngestReport, *, threads: int = IMAGE_THREADS
                ) -> Iterator[tuple[str, FactCheck, dict[str, Any] | None]]:
    """``(ref, fc, image)`` in input order, ``image`` the stored form of what ``images`` read
    from the record's image (``None`` without one), up to ``threads`` images read at once; a
    record whose image cannot be read is reported, naming the image's problem, and left out."""
    pending: deque[tuple[str, FactCheck, Future[Any] | None]] = deque()
    pool = ThreadPoolExecutor(threads, thread_name_prefix="factsieve-image") if images else None

    def finish(ref: str, fc: FactCheck, future: Future[Any] | None) -> Iterator[Any]:
        image, reason = future.result() if future is not None else (None, None)
        if reason is not None:
            report.reject(ref, reason)
        else:
            yield ref, fc, image

    try:
        for ref, fc in items:
            if not fc.has_image:
                pending.append((ref, fc, None))
            elif images is None or pool is None:
                report.reject(ref, "image: this ingest reads no images (pass plugin.ingest.images."
                                   "image_step as images)")
            else:
                pending.append((ref, fc, pool.submit(_read_image, images, fc)))
            while pending and (len(pending) > threads or pending[0][2] is None
                               or pending[0][2].done()):
                yield from finish(*pending.popleft())
        while pending:
            yield from finish(*pending.popleft())
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _batches(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def ingest(records: Iterable[RawRecord], *, store: Store, embedder: Embedder, index: str,
           batch_size: int = 64, refresh: bool = True,
           progress: Callable[[int], None] | None = None, embed_here: bool = True,
           writer: Writer = Writer(), images: ImageStep | None = None) -> IngestReport:
    """Ingest parsed records into ``index`` (an alias) as ``writer``; returns the per-record report.

    Owners (``plugin.owners``): each batch's ids are looked up in one ``mget``; a record whose id
    another tenant owns is rejected, never written, and the batch goes on. New ids are written
    with ``create`` and existing ones on the version read, so a document that changes hands
    between the look-up and the write is not overwritten either (that record is rejected). An
    id repeated in the input while its first copy is still in flight is written as that copy
    decided, unconditionally: should the first copy lose such a race, the repeat would still
    overwrite (the one window left).

    ``embed_here=False``: documents go without a vector, for the index's default ingest pipeline
    to embed with the hosted model (``FactCheckIndex.embeds_here`` decides). A document the
    pipeline fails on (the model not answering yet after a node restart) is embedded here and
    sent again, so nothing is lost to it. The caller checks the embedding model against the
    index first (``templates.check_model``).

    ``images`` (``plugin.ingest.images.image_step``) reads a record's image (``image_base64``,
    ``image_path``, ``image_url``) into the document's ``image`` field; a record whose image it
    cannot read is rejected with the image's problem. Without it, a record with an image is
    rejected: its image would be silently lost.
    """
    report = IngestReport()
    now = datetime.now(timezone.utc).isoformat()
    refs: dict[str, str] = {}
    #: sent without a vector, no answer yet: what to send again if the pipeline fails on it
    waiting: dict[str, tuple[FactCheck, Write, dict[str, Any] | None]] = {}
    retry: list[tuple[FactCheck, Write, dict[str, Any] | None]] = []
    #: id -> [copies sent and not answered yet, how the first was written]
    in_flight: dict[str, list[Any]] = {}

    def allowed(batch: list[tuple[str, FactCheck, Any]]) -> list[tuple[str, FactCheck, Any, Write]]:
        """The batch's records ``writer`` may write, with how; the others rejected."""
        ask = sorted({fc.id for _, fc, _ in batch if fc.id not in in_flight})
        plans = owners.plan(ask, owners.existing(store.mget(index, ask, source=[owners.FIELD])), writer)
        out = []
        for ref, fc, image in batch:
            if fc.id in in_flight:  # a repeat of a copy still in flight: written as it decided
                write: Write | None = Write(owner=in_flight[fc.id][1].owner, condition={})
            else:
                write = plans[fc.id]
            if write is None:
                report.reject(ref, owners.refusal("fact-check", fc.id))
                continue
            in_flight.setdefault(fc.id, [0, write])[0] += 1
            out.append((ref, fc, image, write))
        return out

    def actions() -> Iterator[dict[str, Any]]:
        for batch in _batches(read_images(validate(records, report), images, report), batch_size):
            writes = allowed(batch)
            if not writes:
                continue
            if embed_here:
                vectors: Any = embed_factchecks(embedder, [fc for _, fc, _, _ in writes])
            else:
                vectors = [None] * len(writes)
            for (ref, fc, image, write), vec in zip(writes, vectors):
                refs[fc.id] = ref
                if vec is None:
                    waiting[fc.id] = (fc, write, image)
                yield _action(index, fc, vec, now, write, image)

    def record(results: Iterable[tuple[bool, dict[str, Any]]], *, second: bool) -> None:
        for ok, info in results:
            item = next(iter(info.values()), {}) if info else {}  # "index" or "create"
            doc_id = str(item.get("_id"))
            sent = waiting.pop(doc_id, None)
            if ok and item.get("result") == "created":
                report.indexed += 1
            elif ok:
                report.updated += 1
            elif sent is not None and not second and item.get("status") != 409:
                retry.append(sent)
                continue
            elif item.get("status") == 409:  # create or conditional write lost to another writer
                report.reject(refs.get(doc_id, doc_id), owners.raced("fact-check", doc_id))
            else:
                err = item.get("error", {})
                reason = err.get("reason", str(err)) if isinstance(err, dict) else str(err)
                report.reject(refs.get(doc_id, doc_id), f"OpenSearch rejected id {doc_id}: {reason}")
            refs.pop(doc_id, None)
            flying = in_flight.get(doc_id)
            if flying is not None:
                flying[0] -= 1
                if flying[0] <= 0:
                    del in_flight[doc_id]
            if progress:
                progress(1)

    record(store.bulk(actions(), chunk_size=max(batch_size, 100)), second=False)
    if retry:
        log.warning("the ingest pipeline failed on %d documents; embedding them here", len(retry))
        vectors = embed_factchecks(embedder, [fc for fc, _, _ in retry])
        again = (_action(index, fc, vec, now, write, image)
                 for (fc, write, image), vec in zip(retry, vectors))
        record(store.bulk(again, chunk_size=max(batch_size, 100)), second=True)
    if refresh:
        store.refresh(index)
    return report


def _action(index: str, fc: FactCheck, vector: Any | None, now: str, write: Write,
            image: dict[str, Any] | None = None) -> dict[str, Any]:
    """One bulk action: ``index`` unless ``write`` says ``create`` or a version to write on."""
    source = {**to_document(fc, vector, now, image), owners.FIELD: write.owner}
    return {"_op_type": "index", **write.condition, "_index": index, "_id": fc.id, "_source": source}
