"""``ClaimStore``: the claims alias, and the join's reads of the posts alias, over ``Store``.

One document per (tenant, claim) in the claims alias (``FACTSIEVE_CLAIMS_INDEX``). A claim is
updated by reading it with its version and writing it over that version (``records.add_post``
computes the new document; a concurrent writer makes the write a ``Conflict`` and it is read and
applied again). Two posts of a new claim arriving at the same moment in two workers may each
start a claim: a race splits, it never merges.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from plugin.claims import queries as q
from plugin.claims.cluster import Earlier, PostSignals
from plugin.claims.trending import due
from plugin.claims.records import (Claim, ClaimEvent, ClaimPost, EventAction, Lead, Status, add_post, claim_posts_of,
                                   decided, merge_claims, new_claim, remove_post)
from plugin.errors import BackendUnavailable, BadInput, Conflict, ContentTooLarge, NotFound
from plugin.models import post_doc_id
from plugin.index.bodies import cosine_of
from plugin.index.store import Store
from plugin.index.templates import ensure_plain_index
from plugin.search.duplicates import post_words
from plugin.settings import Settings

if TYPE_CHECKING:
    from plugin.claims.recent import RecentPosts

#: the claim fields a read for an update takes
CLAIM_FIELDS = ["tenant", "claim_id", "status", "lead", "post_count", "langs", "days", "first_seen", "last_seen",
                "fact_check", "check_worthiness", "recent_posts", "updated_at", "merged_into", "removed_posts", "absorbed", "trending_at",
                "trending_by"]
#: how many merges the join follows from a post's claim to the claim that holds it now
MERGE_HOPS = 10
#: the most claims one merge names
MERGE_MAX_CLAIMS = 50
#: how many times a claim update is read and written again after a concurrent write
UPDATE_ATTEMPTS = 8


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def claim_doc_id(tenant: str, claim_id: str) -> str:
    """A claim's document id: one per (tenant, claim)."""
    return "cl_" + hashlib.sha256(f"{tenant}\x1f{claim_id}".encode()).hexdigest()[:32]


def new_claim_id(tenant: str, post_id: str) -> str:
    """The id of the claim a post starts: from the post, so a retried job starts the same one."""
    return "c" + hashlib.sha256(f"{tenant}\x1f{post_id}".encode()).hexdigest()[:15]


class ClaimStore:
    """The claims alias and the posts-alias reads the join makes. Every read names its tenant."""

    def __init__(self, store: Store, settings: Settings, *, vector: Callable[[str], Sequence[float]] | None = None,
                 clock: Callable[[], str] = now_iso, recent: RecentPosts | None = None) -> None:
        self.store = store
        #: the last seconds of joined posts, which the posts index may not show yet
        self.recent = recent
        #: a post's embedding as the posts index stores it (``PostMemory.vector``): a split rewrites
        #: the post whole, since the index keeps the vector out of ``_source``
        self.vector = vector
        self.settings = settings
        self.alias = settings.claims_index
        self.posts_alias = settings.posts_index
        self.clock = clock
        self._ready = False
        #: tenants known to have an answered claim
        self._answered: set[str] = set()

    def ensure(self) -> None:
        """The claims alias present with the current mapping, once per process."""
        if not self._ready:
            ensure_plain_index(self.store, "claims", self.alias, self.settings.index_replicas)
            self._ready = True

    # -- the join's reads -------------------------------------------------------------------------
    def joined_before(self, tenant: str, post_doc_id: str) -> str | None:
        """The claim a post already joined (a retried job), from its posts document."""
        return self.claims_of(tenant, [post_doc_id]).get(post_doc_id)

    def claims_of(self, tenant: str, post_doc_ids: Sequence[str]) -> dict[str, str]:
        """``{post doc id: the claim it joined}`` of the tenant's posts among ``post_doc_ids``, in
        one read."""
        found = self.store.mget_across(self.posts_alias, list(post_doc_ids), source=["claim_id", "tenant"])
        return {i: src["claim_id"] for i, h in found.items()
                if (src := h.get("_source") or {}).get("tenant") == tenant and src.get("claim_id")}

    def earlier(self, tenant: str, vector: Sequence[float], k: int, answer: str | None) -> list[Earlier]:
        """The earlier posts the join compares a post with: its ``k`` nearest, and its ``k``
        nearest whose best match was ``answer``; once each."""
        bodies = [q.earlier_body(tenant, vector, k)]
        if answer is not None:
            bodies.append(q.earlier_body(tenant, vector, k, answer=answer))
        seen: dict[str, Earlier] = {}
        # the posts of the last seconds first (the index may not show them yet); the index's
        # copy of one it shows, with its claim as stored now, wins
        for e in self.recent.earlier(tenant, vector) if self.recent is not None else ():
            seen[e.post.post_id] = e
        indexed: set[str] = set()
        for resp in self.store.msearch(self.posts_alias, bodies):
            for h in resp["hits"]["hits"]:
                src = h["_source"]
                if src["post_id"] in indexed or not src.get("claim_id"):
                    continue
                indexed.add(src["post_id"])
                seen[src["post_id"]] = Earlier(
                    PostSignals(src["post_id"], post_words(src.get("text")), src.get("answer"),
                                src.get("answer_confidence"), src.get("image_hash"), frozenset(src.get("kept_out") or ())),
                    src["claim_id"], cosine_of(h["_score"]))
        now = self.current({e.claim_id for e in seen.values()}, tenant)
        return [e if now.get(e.claim_id, e.claim_id) == e.claim_id else
                replace(e, claim_id=now[e.claim_id], joined_claim=e.claim_id) for e in seen.values()]

    def current(self, claim_ids: set[str], tenant: str) -> dict[str, str]:
        """``{claim id: the claim that holds its posts now}`` for claims the desk merged (one
        read per hop of merges, at most ``MERGE_HOPS``)."""
        out: dict[str, str] = {}
        todo = {c: c for c in claim_ids}
        for _ in range(MERGE_HOPS):
            if not todo:
                break
            docs = {claim_doc_id(tenant, c): c for c in set(todo.values())}
            found = self.store.mget(self.alias, list(docs), source=["merged_into"]) if docs else {}
            merged = {docs[d]: (h.get("_source") or {}).get("merged_into") for d, h in found.items()}
            nxt = {}
            for start, at in todo.items():
                if merged.get(at):
                    nxt[start] = merged[at]
                else:
                    out[start] = at
            todo = nxt
        out.update(todo)
        return out

    # -- writes -----------------------------------------------------------------------------------
    def add_post(self, tenant: str, claim_id: str, post: ClaimPost) -> Claim:
        """Count ``post`` in the claim (made when it does not exist), over the version read."""
        self.ensure()
        doc_id = claim_doc_id(tenant, claim_id)
        for _ in range(UPDATE_ATTEMPTS):
            now = self.clock()
            found = self.store.mget(self.alias, [doc_id], source=CLAIM_FIELDS).get(doc_id)
            if found is None:
                claim = add_post(new_claim(claim_id, tenant, post, now), post, now)
                try:
                    self.store.put(self.alias, doc_id, claim.to_source(), create=True)
                    return claim
                except Conflict:
                    continue
            current = Claim.from_source(found["_source"])
            if current.merged_into:  # merged while the post was joining it: counted where it went
                return self.add_post(tenant, current.merged_into, post)
            updated = add_post(current, post, now)
            if updated is current:
                return current
            try:
                self.store.put(self.alias, doc_id, updated.to_source(), if_seq_no=found["_seq_no"],
                               if_primary_term=found["_primary_term"])
                return updated
            except Conflict:
                continue
        raise BackendUnavailable(f"claim {claim_id} kept changing while post {post.post_id} joined it; retry")

    def _update(self, tenant: str, claim_id: str, change: Callable[[Claim], Claim]) -> Claim:
        """Apply ``change`` to the claim over the version read (read again after a concurrent write)."""
        doc_id = claim_doc_id(tenant, claim_id)
        for _ in range(UPDATE_ATTEMPTS):
            found = self.store.mget(self.alias, [doc_id], source=CLAIM_FIELDS).get(doc_id)
            if found is None or found["_source"].get("tenant") != tenant:
                raise NotFound(f"no claim with id {claim_id[:200]!r}")
            current = Claim.from_source(found["_source"])
            updated = change(current)
            if updated is current:
                return current
            try:
                self.store.put(self.alias, doc_id, updated.to_source(), if_seq_no=found["_seq_no"],
                               if_primary_term=found["_primary_term"], refresh="wait_for")
                return updated
            except Conflict:
                continue
        raise BackendUnavailable(f"claim {claim_id} kept changing; try again")

    def _event(self, event: ClaimEvent) -> None:
        self.store.put(self.settings.decisions_index, event.id, event.to_source(), create=True, refresh="wait_for")

    def _event_id(self) -> str:
        import uuid

        return "ce_" + uuid.uuid4().hex

    def split(self, tenant: str, claim_id: str, post_id: str, *, actor: str, origin: str = "api",
              note: str | None = None) -> dict[str, Any]:
        """Take ``post_id`` out of the claim into a claim of its own (the desk's "not the same
        claim"): the post is re-pointed and kept out of the claim (a cannot-link its re-posts
        inherit), the new claim counts it, the old one no longer does, and the event is logged.
        A post that is not in the claim is a ``Conflict``; the claim's only post too."""
        claim = self.get(tenant, claim_id)
        doc_id = post_doc_id(tenant, post_id)
        found = self.store.mget_across(self.posts_alias, [doc_id], source=list(q.SPLIT_FIELDS)).get(doc_id)
        src = (found or {}).get("_source") or {}
        if src.get("tenant") != tenant or src.get("claim_id") not in claim.ids:
            raise Conflict(f"post {post_id[:200]!r} is not in claim {claim_id!r}")
        if self.vector is None:
            raise BackendUnavailable("this process cannot split claims: it has no embedding model")
        if claim.post_count <= 1:
            raise Conflict(f"post {post_id[:200]!r} is claim {claim_id!r}'s only post: nothing to split")
        new_id = "c" + hashlib.sha256(f"{tenant}\x1f{post_id}\x1fsplit\x1f{claim_id}".encode()).hexdigest()[:15]
        kept_out = sorted({*(src.get("kept_out") or ()), claim_id})
        body = {**src, "claim_id": new_id, "kept_out": kept_out,
                "embedding": [float(x) for x in self.vector(src.get("text") or "")]}
        self.store.put(found["_index"], doc_id, body, if_seq_no=found["_seq_no"],
                       if_primary_term=found["_primary_term"], refresh="wait_for")
        post = ClaimPost(post_id, src.get("text") or "", src.get("lang"), src.get("created_at") or self.clock(),
                         src.get("answer"), None, src.get("answer_confidence"))
        new = self.add_post(tenant, new_id, post)
        lead = self._lead(tenant, claim.ids)
        old = self._update(tenant, claim_id, lambda c: remove_post(c, post, lead, self.clock()))
        event = ClaimEvent(self._event_id(), tenant, EventAction.SPLIT, actor, self.clock(), origin, claim_id,
                           (new_id,), (post_id,), note)
        self._event(event)
        return {"claim": old, "new_claim": new, "event": event}

    def _lead(self, tenant: str, claim_ids: Sequence[str]) -> Lead | None:
        hits = self.store.search(self.posts_alias, q.lead_body(tenant, claim_ids))["hits"]["hits"]
        if not hits:
            return None
        s = hits[0]["_source"]
        return Lead(s["post_id"], s.get("text") or "", s.get("lang"), s.get("created_at") or "", s.get("answer_confidence"))

    def merge(self, tenant: str, claim_ids: Sequence[str], *, actor: str, into: str | None = None,
              origin: str = "api", note: str | None = None) -> dict[str, Any]:
        """Merge the claims into one (``into``, or the one with the most posts): it counts the
        others' posts and lists them as ``absorbed``, the others are ``merged`` with
        ``merged_into`` (their posts keep their ``claim_id``; a later post linked to one of them
        joins the claim they went into: a must-link), and the event is logged. Its cost is one
        write per claim, whatever their sizes. Another tenant's claim is "not found", as an
        unknown one is; nothing is written unless every claim is found."""
        ids = list(dict.fromkeys(claim_ids))
        if into is not None and into not in ids:
            ids.insert(0, into)
        if len(ids) < 2:
            raise BadInput("a merge names at least two different claims")
        if len(ids) > MERGE_MAX_CLAIMS:
            raise ContentTooLarge(f"a merge names at most {MERGE_MAX_CLAIMS} claims")
        claims = {i: self.get(tenant, i) for i in ids}
        merged = [c for c in claims.values() if c.merged_into]
        if merged:
            raise Conflict(f"claim {merged[0].id!r} was merged into {merged[0].merged_into!r}: merge that one")
        target = claims[into] if into else max(claims.values(), key=lambda c: (c.post_count, c.first_seen[::-1]))
        others = [c for c in claims.values() if c.id != target.id]
        for other in others:
            self._update(tenant, other.id, lambda c, t=target.id: replace(c, status=Status.MERGED, merged_into=t,
                                                                        updated_at=self.clock()))
            target = self._update(tenant, target.id, lambda c, o=other: merge_claims(c, o, self.clock()))
        event = ClaimEvent(self._event_id(), tenant, EventAction.MERGE, actor, self.clock(), origin, target.id,
                           tuple(c.id for c in others), (), note)
        self._event(event)
        return {"claim": target, "merged": [c.id for c in others], "event": event}

    def decide(self, tenant: str, claim_id: str, action: str, factcheck_id: str | None,
               factcheck_claim: str | None) -> Claim:
        """Record the desk's decision on the claim itself (``records.decided``)."""
        return self._update(tenant, claim_id, lambda c: decided(c, action, factcheck_id, factcheck_claim, self.clock()))

    def post_ids(self, tenant: str, claim: Claim, limit: int) -> list[str]:
        """The ids of the claim's posts the posts index holds, at most ``limit``, oldest first
        (after one refresh when the index shows fewer than the claim counts: ``_claim_posts``)."""
        return [h["_source"]["post_id"] for h in self._claim_posts(tenant, claim, None, limit)["hits"]["hits"]]

    def _claim_posts(self, tenant: str, claim: Claim, after: list[Any] | None, limit: int) -> dict[str, Any]:
        """The search for one page of the claim's posts. A post is counted in the claim after it
        was written, but a search shows it only after the index's next refresh: when the first
        page shows fewer posts than the claim counts, the index is refreshed and searched once
        more (a decision on the claim reaches a post that joined a moment before it; posts
        deleted by retention cost that one refresh)."""
        body = q.claim_posts_body(tenant, claim.ids, after=after, limit=limit)
        resp = self.store.search(self.posts_alias, body)
        if after is None and resp["hits"]["total"]["value"] < claim.post_count:
            self.store.refresh(self.posts_alias)
            resp = self.store.search(self.posts_alias, body)
        return resp

    def posts_since(self, tenant: str, claim: Claim, since: str, post_id: str) -> int:
        """How many of the claim's posts arrived at or after ``since``: ``post_id`` (the post
        just written) and the last seconds' posts of the claim (``RecentPosts``), which a search
        may not see yet (a burst of re-posts is counted whole), and the others the posts index
        shows."""
        late = {post_id, *(self.recent.of_claims(tenant, claim.ids) if self.recent is not None else ())}
        body = q.posts_since_body(tenant, claim.ids, since, sorted(late))
        return len(late) + self.store.search(self.posts_alias, body)["hits"]["total"]["value"]

    def mark_trending(self, tenant: str, claim_id: str, posts_in_window: int, posts: int, window_hours: float,
                      post_id: str | None = None) -> Claim | None:
        """Record that the claim's ``claim.trending`` alert goes now, when one is due
        (``trending.due``, checked again over the version written: two workers send one);
        the claim when this call marked it, ``None`` otherwise."""
        marked: list[Claim] = []

        def change(c: Claim) -> Claim:
            marked.clear()  # a write lost to another worker is read and decided again
            now = self.clock()
            if not due(c, posts_in_window, posts, window_hours, now):
                return c
            out = replace(c, trending_at=now, trending_by=post_id, updated_at=now)
            marked[:] = [out]
            return out

        self._update(tenant, claim_id, change)
        return marked[0] if marked else None

    def events(self, tenant: str, claim_id: str) -> list[ClaimEvent]:
        """The claim's split and merge events, oldest first."""
        hits = self.store.search(self.settings.decisions_index, q.events_body(tenant, claim_id))["hits"]["hits"]
        return [ClaimEvent.from_source(h["_source"]) for h in hits]

    # -- reads ------------------------------------------------------------------------------------
    def has_answered(self, tenant: str) -> bool:
        """Whether any of the tenant's claims was ever answered by the desk (a yes is kept for the
        process's life; a no is asked again on the next post, so a first answer counts at once)."""
        if tenant in self._answered:
            return True
        self.ensure()
        resp = self.store.search(self.alias, q.answered_body(tenant))
        if resp["hits"]["total"]["value"] > 0:
            self._answered.add(tenant)
            return True
        return False

    def find(self, tenant: str, claim_id: str) -> Claim | None:
        """The tenant's claim, or ``None``."""
        try:
            return self.get(tenant, claim_id)
        except NotFound:
            return None

    def get(self, tenant: str, claim_id: str) -> Claim:
        """The tenant's claim; another tenant's is "not found", as an unknown one is."""
        self.ensure()
        src = self.store.find(self.alias, claim_doc_id(tenant, claim_id))
        if src is None or src.get("tenant") != tenant:
            raise NotFound(f"no claim with id {claim_id[:200]!r}")
        return Claim.from_source(src)

    def page(self, tenant: str, *, status: str | None = None, lang: str | None = None,
             since: str | None = None, min_posts: int | None = None, sort: str = "newest",
             cursor: str | None = None, limit: int = 50) -> dict[str, Any]:
        """One page of the tenant's claims: ``{"claims", "total", "next"}`` (``sort="priority"``:
        ``ranked_page``)."""
        self.ensure()
        if sort == q.PRIORITY:
            return self.ranked_page(tenant, lang=lang, min_posts=min_posts, cursor=cursor, limit=limit)
        after = q.decode_cursor(cursor) if cursor else None
        body = q.list_body(tenant, status=status, lang=lang, since=since, min_posts=min_posts, sort=sort,
                           after=after, limit=limit)
        resp = self.store.search(self.alias, body)
        hits = resp["hits"]["hits"]
        nxt = q.encode_cursor(hits[-1]["sort"]) if len(hits) == limit else None
        return {"claims": [c.to_dict() for c in self._as_now([Claim.from_source(h["_source"]) for h in hits])],
                "total": resp["hits"]["total"]["value"], "next": nxt}

    def ranked_page(self, tenant: str, *, lang: str | None, min_posts: int | None, cursor: str | None,
                    limit: int) -> dict[str, Any]:
        """The open and answered claims seen within the priority's window (at most its ``max_claims``, newest
        first), ranked by ``priority.ranked``, one page of them; each with its ``priority``."""
        from datetime import date, timedelta

        from plugin.claims.priority import priority, ranked, weights

        w = weights()
        today = date.fromisoformat(self.clock()[:10])
        since = (today - timedelta(days=w.window_days)).isoformat()
        start = q.decode_cursor(cursor)[0] if cursor else 0
        hits = self.store.search(self.alias, q.recent_open_body(tenant, since, w.max_claims, lang, min_posts))
        order = ranked([Claim.from_source(h["_source"]) for h in hits["hits"]["hits"]], today, w)
        page = self._as_now([c for c, _ in order[start:start + limit]])
        nxt = q.encode_cursor([start + limit, q.PRIORITY]) if start + limit < len(order) else None
        return {"claims": [{**c.to_dict(), "priority": priority(c, today, w)} for c in page], "total": len(order),
                "next": nxt}

    def _as_now(self, claims: list[Claim]) -> list[Claim]:
        """A page's claims as they are now: a search shows each as of the index's last refresh (a
        post that joined a moment ago, and was already answered, not counted yet), so the page's
        claims are read again by id, in one real-time read; which claims and their order stay the
        search's."""
        if not claims:
            return claims
        found = self.store.mget(self.alias, [claim_doc_id(c.tenant, c.id) for c in claims], source=CLAIM_FIELDS)
        return [Claim.from_source(h["_source"]) if (h := found.get(claim_doc_id(c.tenant, c.id))) else c
                for c in claims]

    def posts(self, tenant: str, claim_id: str, *, cursor: str | None = None, limit: int = 50) -> dict[str, Any]:
        """One page of the claim's posts, oldest first (those the posts index still holds; the
        first page as ``_claim_posts`` reads it)."""
        resp = self._claim_posts(tenant, self.get(tenant, claim_id), q.decode_cursor(cursor) if cursor else None, limit)
        hits = resp["hits"]["hits"]
        return {"posts": claim_posts_of(hits), "total": resp["hits"]["total"]["value"],
                "next": q.encode_cursor(hits[-1]["sort"]) if len(hits) == limit else None}
