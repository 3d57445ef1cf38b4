"""``PostMemory``: the posts index and the reads the memory step makes, over ``Store``.

Each post a worker matched is one document per (tenant, post) in the posts alias
(``FACTSIEVE_POSTS_INDEX``) with its embedding. The embedding is the base model's query side
(``Embedder.encode_queries``) over the normalised post (``normalize_post``: URLs, mentions, the
"RT @user:" prefix and the tweet signature go, hashtags and emoji become words). It is not the
tuned query tower a retrieval configuration may name: posts are compared with posts, not with
fact-checks, the tower was trained for the latter, and one plain embedding keeps the index
valid whichever configuration matched a post. Measured: docs/learning.md.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from plugin.embedding import Embedder
from plugin.errors import Conflict
from plugin.index.store import Store
from plugin.index.templates import check_model, ensure_plain_index
from plugin.learn import memory_queries as q
from plugin.learn.memory import Neighbour
from plugin.models import STORED_FIELDS, post_doc_id  # noqa: F401 - the posts index's ids
from plugin.review.records import Decision, decisions_of
from plugin.search.normalize import normalize_post
from plugin.settings import Settings

#: how many posts' vectors a process keeps (the memory step embeds a post, the post job then
#: writes the same vector: one encoding)
VECTOR_CACHE = 256


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def post_record(tenant: str, post: Mapping[str, Any], lang: str | None, vector: Sequence[float],
                created_at: str, joined: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A post's stored body (pure); ``joined``: the claim fields the post job adds
    (``claim_id``, ``answer``, ``answer_confidence``, ``image_hash``: ``plugin.claims``)."""
    return {"tenant": tenant, "post_id": post["id"], "text": post["text"], "lang": lang,
            "date": post.get("date") or None, "created_at": created_at,
            "embedding": [float(x) for x in vector], **(joined or {})}


class PostMemory:
    """The posts alias (written by the post job) and the memory's reads of it, of the decision
    log and of the fact-check alias. Every read names its tenant."""

    def __init__(self, store: Store, settings: Settings, embedder: Embedder, *,
                 clock: Callable[[], str] = now_iso) -> None:
        self.store = store
        self.settings = settings
        self.embedder = embedder
        self.alias = settings.posts_index
        self.clock = clock
        self._vectors: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()
        self._ready = False
        #: tenants known to have decisions (the log is append-only: once true, always true)
        self._decided: set[str] = set()

    def ensure(self) -> None:
        """The posts alias (checked against the embedding model) and the decision log present,
        once per process (``factsieve init`` installs both)."""
        if self._ready:
            return
        replicas = self.settings.index_replicas
        ensure_plain_index(self.store, "posts", self.alias, replicas, self.template_values())
        check_model(self.store, self.alias, self.embedder.name, self.embedder.dim)
        ensure_plain_index(self.store, "decisions", self.settings.decisions_index, replicas)
        self._ready = True

    def template_values(self) -> dict[str, Any]:
        """The posts template's placeholders: the model its vectors come from."""
        return {"model": self.embedder.name, "dimension": self.embedder.dim}

    def has_decisions(self, tenant: str) -> bool:
        """Whether the tenant's desk has decided anything: the memory step reads nothing more
        for a tenant without decisions (no embedding, no kNN). A yes is kept for the process's
        life; a no is asked again on the next post, so a first decision counts at once."""
        if tenant in self._decided:
            return True
        self.ensure()
        resp = self.store.search(self.settings.decisions_index, q.any_decision_body(tenant))
        if resp["hits"]["total"]["value"] > 0:
            with self._lock:
                self._decided.add(tenant)
            return True
        return False

    def vector(self, text: str) -> list[float]:
        """The post's embedding (see the module's docstring), kept for the next few calls."""
        with self._lock:
            if text in self._vectors:
                self._vectors.move_to_end(text)
                return self._vectors[text]
        query = normalize_post(text) or text.strip()
        vec = [float(x) for x in self.embedder.encode_queries([query])[0]]
        with self._lock:
            self._vectors[text] = vec
            while len(self._vectors) > VECTOR_CACHE:
                self._vectors.popitem(last=False)
        return vec

    def remember(self, tenant: str, post: Mapping[str, Any], lang: str | None,
                 joined: Mapping[str, Any] | None = None) -> None:
        """Write the post (idempotent: a second write of the same post replaces the first and
        keeps when it was first seen), with the claim it ``joined``."""
        self.ensure()
        doc_id = post_doc_id(tenant, post["id"])
        body = post_record(tenant, post, lang, self.vector(post["text"]), self.clock(), joined)
        # the alias rolls (plugin.index.rolling): a post first seen in an older month is
        # rewritten where it is, never created again in the write index
        found = self.store.mget_across(self.alias, [doc_id], source=["created_at"]).get(doc_id)
        if found is None:
            try:
                self.store.put(self.alias, doc_id, body, create=True)
                return
            except Conflict:  # written by a concurrent delivery between the read and the write
                found = self.store.mget_across(self.alias, [doc_id], source=["created_at"]).get(doc_id)
        if found is not None:
            body["created_at"] = found["_source"].get("created_at") or body["created_at"]
        self.store.put(found["_index"] if found else self.alias, doc_id, body)

    def neighbours(self, tenant: str, vector: Sequence[float], k: int) -> list[Neighbour]:
        """The tenant's ``k`` posts nearest ``vector``, with their cosine similarity."""
        self.ensure()
        hits = self.store.search(self.alias, q.neighbours_body(tenant, vector, k))["hits"]["hits"]
        return [Neighbour(h["_source"]["post_id"], q.cosine_of(h["_score"]), h["_source"].get("text"))
                for h in hits]

    def decisions(self, tenant: str, post_ids: Sequence[str]) -> list[Decision]:
        """The tenant's decisions on ``post_ids``, oldest first (parsed here, at the log's edge;
        without their post text, note and candidates' fact-check fields: ``q.DECISION_FIELDS``)."""
        if not post_ids:
            return []
        self.ensure()
        body = q.decisions_body(tenant, post_ids)
        hits = self.store.search(self.settings.decisions_index, body)["hits"]["hits"]
        return list(decisions_of([h["_source"] for h in hits]))

    def factchecks(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The stored fields of the fact-checks of ``ids`` that still exist."""
        found = self.store.mget(self.settings.index, list(ids), source=list(STORED_FIELDS))
        return {i: h["_source"] for i, h in found.items()}
