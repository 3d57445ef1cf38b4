"""The evidence index as verification and its writers use it: the alias made ready, a JSON Lines
body planned under the passage caps and ingested, the hybrid retriever. The API's synchronous
path, the evidence job and the verifier all come here; ``Services.evidence`` builds it."""
from __future__ import annotations

import io
import threading
from typing import TYPE_CHECKING, Any

from plugin.owners import Writer

if TYPE_CHECKING:
    from plugin.embedding import Embedder
    from plugin.evidence.caps import EvidencePlan
    from plugin.evidence.ingest import EvidenceReport
    from plugin.evidence.retrieve import EvidenceRetriever
    from plugin.index.store import Store
    from plugin.settings import Settings


class EvidenceIndex:
    def __init__(self, store: Store, settings: Settings, embedder: Embedder) -> None:
        self.store, self.settings, self.embedder = store, settings, embedder
        self._index: str | None = None
        self._retrievers: dict[int, EvidenceRetriever] = {}
        self._lock = threading.Lock()

    def ensure(self) -> str:
        """Templates installed and the evidence alias present (once per process)."""
        from plugin.evidence.index import ensure_evidence_index

        with self._lock:
            if self._index is None:
                self._index = ensure_evidence_index(self.store, self.settings, self.embedder)
            return self._index

    def plan(self, data: bytes, claim_id: str | None = None) -> EvidencePlan:
        """What a JSON Lines evidence body would make, under the passage caps; refuses it (413,
        422, 400) before anything is written (``plugin.evidence.caps.plan_evidence``)."""
        from plugin.evidence import parse
        from plugin.evidence.caps import plan_evidence

        return plan_evidence(parse(io.BytesIO(data), "body", claim_id=claim_id),
                             per_document=self.settings.max_passages_per_document,
                             per_request=self.settings.max_passages_per_request)

    def ingest_body(self, data: bytes, claim_id: str | None = None, progress: Any = None, *,
                    writer: Writer | None = None) -> EvidenceReport:
        """Ingest a JSON Lines evidence body: the caps are checked on the whole body first, so a
        refused body writes nothing; then its documents are embedded and indexed, each over the
        per-document cap rejected in the report. ``writer`` (the default tenant when ``None``)
        owns what is written: a document another tenant owns is rejected."""
        from plugin.evidence import ingest_evidence, parse

        self.plan(data, claim_id)
        self.ensure()
        return ingest_evidence(parse(io.BytesIO(data), "body", claim_id=claim_id), store=self.store,
                               embedder=self.embedder, index=self.settings.evidence_index,
                               batch_size=self.settings.embedding_batch_size, progress=progress,
                               max_passages_per_document=self.settings.max_passages_per_document,
                               writer=writer or Writer())

    def retriever(self, max_per_url: int | None = None) -> EvidenceRetriever:
        """Hybrid evidence search over the evidence alias, at most ``max_per_url`` passages of
        one page (the retriever's default when ``None``), one per process and cap."""
        from plugin.evidence.retrieve import MAX_PER_URL, EvidenceRetriever

        n = max_per_url or MAX_PER_URL
        with self._lock:
            if n not in self._retrievers:
                self._retrievers[n] = EvidenceRetriever(self.store, self.embedder, self.settings, max_per_url=n)
            return self._retrievers[n]
