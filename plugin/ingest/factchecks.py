"""The fact-check index as its writers use it: the alias made ready, records ingested (with their
images read and their vectors computed where ``FACTSIEVE_INGEST_EMBEDDING`` says), one deleted.
The CLI, the API and the ingest job all come here; ``Services.factchecks`` builds it."""
from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from plugin import owners
from plugin.errors import BadInput, NotFound
from plugin.index.templates import IndexSpec
from plugin.owners import Writer

if TYPE_CHECKING:
    from plugin.embedding import Embedder
    from plugin.index.store import Store
    from plugin.ingest.pipeline import IngestReport
    from plugin.settings import Settings


class FactCheckIndex:
    def __init__(self, store: Store, settings: Settings, embedder: Embedder) -> None:
        self.store, self.settings, self.embedder = store, settings, embedder
        self._index: str | None = None
        self._lock = threading.Lock()

    def spec(self) -> IndexSpec:
        """The fact-check index the settings and the configured embedding model describe."""
        return IndexSpec(alias=self.settings.index, model=self.embedder.name,
                         dimension=self.embedder.dim, replicas=self.settings.index_replicas)

    def ensure(self) -> str:
        """Templates installed and the fact-check alias present (once per process); the concrete
        index behind it."""
        from plugin.index.templates import ensure_index

        with self._lock:
            if self._index is None:
                self._index = ensure_index(self.store, self.spec())
            return self._index

    def installed(self, index: str) -> None:
        """What ``factsieve init`` made: no need to ensure it again in this process."""
        self._index = index

    def embeds_here(self) -> bool:
        """Where FactSieve's own ingest computes vectors (``FACTSIEVE_INGEST_EMBEDDING``):
        ``client`` here; ``hosted`` in the index's default ingest pipeline, which
        ``factsieve init`` set up with the hosted model; ``auto`` (the default) hosted when the
        index records a hosted model of the configured embedder's graph, else here. Measured
        (README, "Query OpenSearch directly"): the pipeline ingested CLEF-2020 faster here, with
        the same evaluation scores within noise."""
        from plugin.index.hosted import bundle_name
        from plugin.index.templates import index_model

        mode = self.settings.ingest_embedding
        if mode == "client":
            return True
        hosted = index_model(self.store, self.settings.index).get("hosted_model") or {}
        path = getattr(self.embedder, "model_path", None)
        ours = path is not None and hosted.get("name") == bundle_name(self.embedder.name, path.name)
        if mode == "hosted" and not ours:
            raise BadInput(f"FACTSIEVE_INGEST_EMBEDDING=hosted, but index {self.settings.index!r} "
                           "has no hosted model of the configured embedder: run `factsieve init` "
                           "on a cluster with ML Commons")
        return not ours

    def ingest(self, records: Iterable[Any], *, batch_size: int | None = None, progress: Any = None,
               writer: Writer = Writer(), local_files: bool = False) -> IngestReport:
        """Fact-check records into the alias as ``writer`` (``plugin.owners``: another tenant's
        ids are rejected), with vectors computed where ``embeds_here`` says, and their images
        read (``local_files``: an ``image_path`` too, for the CLI only)."""
        from plugin.ingest import ingest
        from plugin.ingest.images import image_step

        self.ensure()
        return ingest(records, store=self.store, embedder=self.embedder, index=self.settings.index,
                      batch_size=batch_size or self.settings.embedding_batch_size,
                      progress=progress, embed_here=self.embeds_here(), writer=writer,
                      images=image_step(self.settings, local_files=local_files))

    def delete(self, doc_id: str, writer: Writer) -> None:
        """Delete one fact-check: its owner's or an admin's to delete (``owners.check_delete``),
        and only the version whose owner was checked."""
        index = self.settings.index
        try:
            found = self.store.mget(index, [doc_id], source=[owners.FIELD])
        except NotFound:  # no index behind the alias yet: no such fact-check either
            found = {}
        have = owners.check_delete("fact-check", doc_id, owners.existing(found).get(doc_id), writer)
        self.store.delete(index, doc_id, noun="fact-check", if_seq_no=have.seq_no,
                          if_primary_term=have.primary_term)
