"""``ReviewDesk``: the review queue and the decision log over ``Store``, for the API and the page.

Each (tenant, post) a worker matched is one review item in the ``review`` alias. A decision is
checked whole before anything is written (``decide``), then the items move with optimistic
concurrency (``if_seq_no``/``if_primary_term``: a second reviewer's write over the same version
fails, never overwrites) and the decisions are appended to the ``decisions`` alias with
``op_type=create``, never updated. Tenants see only their own items: another tenant's item is
"not found", not "forbidden", so its existence is not disclosed.
"""
from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from plugin.errors import BackendError, Conflict, DecisionConflict, InvalidRequest, NotFound
from plugin.index.store import Store
from plugin.index.templates import ensure_plain_index
from plugin.review import queries as q
from plugin.review.model import (Action, Origin, ReviewStatus, candidates_of, decided_item,
                                 decision_record, item_record, next_status, taken_back,
                                 training_pairs, validate_decisions)
from plugin.review.records import (Decided, Decision, DecisionRequest, NotRecorded, ReviewItem,
                                   ReviewPage)
from plugin.review.rules import TenantRules
from plugin.settings import Settings

if TYPE_CHECKING:
    from plugin.image.model import ImageAnalysis
    from plugin.search.request import MatchRequest
    from plugin.search.result import Match

#: (tenant, recorded decisions, the items they decided, {undo id: the decision it took back})
#: → planned webhook deliveries
Notify = Callable[[str, list[Decision], dict[str, ReviewItem], dict[str, Decision]], object]
#: what ``_plan`` makes of one checked decision: the item's hit as read, the decision, the item after it
Planned = tuple[dict[str, Any], Decision, ReviewItem]


#: an item's fields as the API shows them (``last_decision`` is the first of ``decisions``' kind)
_ITEM_FIELDS = ("post_id", "tenant", "text", "lang", "date", "source_url", "status", "confidence",
                "created_at", "decided_at", "decided_by", "config", "versions", "candidates",
                "last_decision", "image")
#: every field of a stored item (a decision writes the item back whole)
_STORED_FIELDS = (*_ITEM_FIELDS, "image_thumbnail")


def item_id(tenant: str, post_id: str) -> str:
    """The review item's document id: one per (tenant, post), and no tenant can name another's."""
    return "rv_" + hashlib.sha256(f"{tenant}\x1f{post_id}".encode()).hexdigest()[:32]


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class ReviewDesk:
    """The review queue and decision log of every tenant (each call names its tenant)."""

    def __init__(self, store: Store, settings: Settings, *,
                 search: Callable[[str, MatchRequest], Match] | None = None, notify: Notify | None = None,
                 rules: Callable[[str], TenantRules] | None = None,
                 clock: Callable[[], str] = now_iso) -> None:
        self.store = store
        self.settings = settings
        self.items = settings.review_index
        self.log = settings.decisions_index
        #: ``(tenant, request) -> Match``: the one match path (``plugin.service.matching``), which
        #: a reviewer's manual search goes through like every other match
        self._search = search
        #: plans and sends the webhooks of recorded decisions (``plugin.review.events``)
        self.notify = notify
        #: a tenant's review rules (``Services.review_rules.for_tenant``); none: queue every post
        self.rules = rules or (lambda tenant: TenantRules())
        self.clock = clock
        self._ready = False

    def ensure(self) -> None:
        """Both aliases present, once per process (``factsieve init`` installs them)."""
        if not self._ready:
            replicas = self.settings.index_replicas
            ensure_plain_index(self.store, "review", self.items, replicas)
            ensure_plain_index(self.store, "decisions", self.log, replicas)
            self._ready = True

    # -- items ----------------------------------------------------------------------------------
    def record_item(self, tenant: str, post_id: str, post_text: str, post_lang: str | None,
                    post_date: str | None, source_url: str | None, match: Match,
                    image: ImageAnalysis | None = None) -> bool:
        """A pending item for a matched post; without matches too, with ``candidates: []`` (a
        reviewer answers "none of these", "not a claim" or matches one by hand). A post matched
        again (a resubmission, a redelivered job) refreshes a pending item's candidates and
        leaves a decided one as its reviewer left it.

        The tenant's rules (``plugin.review.rules``) are applied here, the one place items are
        made: a post they keep out makes no item and leaves an existing one as it is. Returns
        whether the rules queue the post."""
        cands = candidates_of(match.candidates, match.reranked)
        best = cands[0].confidence if cands else None
        if not self.rules(tenant).queues(post_lang, best, bool(cands)):
            return False
        self.ensure()
        doc_id = item_id(tenant, post_id)
        body = item_record(tenant=tenant, post_id=post_id, text=post_text, lang=post_lang,
                           date=post_date, source_url=source_url, config=match.config or None,
                           versions=match.versions, candidates=cands, created_at=self.clock(),
                           image=image).to_source()
        try:
            self.store.put(self.items, doc_id, body, create=True)
            return True
        except Conflict:
            pass
        found = self.store.mget(self.items, [doc_id], source=["status", "created_at"]).get(doc_id)
        if found is None or found["_source"].get("status") != ReviewStatus.PENDING.value:
            return True
        try:
            self.store.put(self.items, doc_id, {**body, "created_at": found["_source"]["created_at"]},
                           if_seq_no=found["_seq_no"], if_primary_term=found["_primary_term"])
        except Conflict:
            pass  # decided meanwhile: the reviewer's decision stands
        return True

    def _hits(self, tenant: str, post_ids: list[str],
              fields: tuple[str, ...] = _ITEM_FIELDS) -> dict[str, dict[str, Any]]:
        """The tenant's items of ``post_ids`` that exist, ``{post_id: hit}``, with ``fields``."""
        self.ensure()
        ids = {item_id(tenant, p): p for p in post_ids}
        found = self.store.mget(self.items, list(ids), source=list(fields))
        return {ids[i]: h for i, h in found.items() if h["_source"].get("tenant") == tenant}

    def item(self, tenant: str, post_id: str) -> ReviewItem:
        """One item with its ``version`` (send it back with a decision) and its ``decisions``."""
        hit = self._hits(tenant, [post_id]).get(post_id)
        if hit is None:
            raise NotFound(f"no review item for post {post_id[:200]!r}")
        return replace(ReviewItem.from_hit(hit), decisions=tuple(self.decisions_for(tenant, post_id)))

    def items_of(self, tenant: str, post_ids: list[str]) -> dict[str, ReviewItem]:
        """The tenant's items of ``post_ids`` that exist (without their decisions), one read."""
        return {p: ReviewItem.from_hit(h) for p, h in self._hits(tenant, post_ids).items()}

    def thumbnail(self, tenant: str, post_id: str) -> bytes:
        """The desk's thumbnail of an item's image (JPEG bytes FactSieve encoded); ``NotFound``
        for another tenant's item, an unknown one, or one without an image."""
        self.ensure()
        found = self.store.mget(self.items, [item_id(tenant, post_id)],
                                source=["tenant", "image_thumbnail"]).get(item_id(tenant, post_id))
        src = found["_source"] if found is not None else {}
        if src.get("tenant") != tenant or not src.get("image_thumbnail"):
            raise NotFound(f"no image for post {post_id[:200]!r}")
        return base64.b64decode(src["image_thumbnail"])

    def queue(self, tenant: str, *, status: str | None = "pending", lang: str | None = None,
              min_confidence: float | None = None, max_confidence: float | None = None,
              since: str | None = None, sort: str = "newest", cursor: str | None = None,
              limit: int = 50) -> ReviewPage:
        """A page of the tenant's queue, its ``items``, ``next`` and ``counts``: ``next`` is the cursor
        of the following page (``None`` on the last), ``counts`` the faceted counts
        (``queries.counts_of``). ``status=None``: every state."""
        if not 1 <= limit <= q.MAX_LIMIT:
            raise InvalidRequest(f"limit: {limit} is not between 1 and {q.MAX_LIMIT}", errors=[
                {"field": "limit", "message": f"must be 1 to {q.MAX_LIMIT}", "type": "range"}])
        if min_confidence is not None and max_confidence is not None and min_confidence > max_confidence:
            raise InvalidRequest("min_confidence is above max_confidence", errors=[
                {"field": "min_confidence", "message": "above max_confidence", "type": "range"}])
        since = _iso(since, "since") if since else None
        order = q.Sort.parse(sort)
        body = q.queue_body(tenant, status=ReviewStatus.parse(status, "status") if status else None,
                            lang=lang, min_confidence=min_confidence, max_confidence=max_confidence,
                            since=since, sort=order,
                            after=q.decode_cursor(cursor, order) if cursor else None, limit=limit)
        self.ensure()
        found = self.store.search(self.items, body)
        hits = found["hits"]["hits"]
        nxt = q.encode_cursor(hits[-1]["sort"]) if len(hits) == limit else None
        return ReviewPage(tuple(ReviewItem.from_hit(h) for h in hits), nxt, q.counts_of(found["aggregations"]))

    # -- decisions ------------------------------------------------------------------------------
    def decisions_for(self, tenant: str, post_id: str) -> list[Decision]:
        """A post's decisions, oldest first (none: ``[]``)."""
        self.ensure()
        hits = self.store.search(self.log, q.decisions_body(tenant, post_id))["hits"]["hits"]
        return [Decision.from_source(h["_source"]) for h in hits]

    def decide(self, tenant: str, actor: str, decisions: list[object],
               origin: str = "api") -> list[Decision]:
        """``decide_batch``'s recorded decisions, for callers that take nothing less than all: a
        partial result is a ``DecisionConflict`` carrying what ``recorded``."""
        done = self.decide_batch(tenant, actor, decisions, origin)
        if done.not_recorded:
            raise done.conflict()
        return done.recorded

    def decide_batch(self, tenant: str, actor: str, decisions: list[object],
                     origin: str = "api") -> Decided:
        """Record ``decisions`` (each ``{post_id, factcheck_id?, action, note?, version?}``, as
        JSON: checked whole into ``DecisionRequest``s here).

        Everything is checked before anything is written: the shape (422), the list's size (413),
        unknown posts and fact-checks (404), an item decided by someone else or changed since
        ``version`` (409 carrying that decision), an action its state does not allow (422); any
        of these records nothing. Then each item moves only over the version read, and its
        decision is appended. The store has no transaction over many items, so a race found
        while writing (another request moved an item between our read and our write) cannot be
        undone for the items already moved: that is reported, not hidden — a ``Decided`` whose
        ``not_recorded`` names each item lost and who won it (none recorded at all: a 409).
        ``confirm`` without ``factcheck_id`` confirms the top candidate."""
        source = Origin.parse(origin, "origin")
        wanted = validate_decisions(decisions, self.settings.review_bulk_max,
                                    self.settings.review_note_max_chars)
        # the whole stored item: a decision rewrites it, so what the API does not show (the
        # desk's thumbnail) must be read too, or the decided item loses it
        hits = self._hits(tenant, [d.post_id for d in wanted], _STORED_FIELDS)
        missing = [d.post_id for d in wanted if d.post_id not in hits]
        if missing:
            raise NotFound(f"no review item for post{'s' if len(missing) > 1 else ''} "
                           f"{', '.join(repr(p[:200]) for p in missing[:10])}", errors=[
                               {"field": f"decisions[{i}].post_id", "message": "no such review item",
                                "type": "not_found"}
                               for i, d in enumerate(wanted) if d.post_id in missing][:50])
        self._check_manual(wanted, hits)
        at = self.clock()
        planned = [self._plan(d, hits[d.post_id], actor, source, at) for d in wanted]
        done = self._write(tenant, planned)
        if not done.recorded:
            raise done.conflict()
        return done

    def record_feedback(self, tenant: str, post_id: str, helped: bool, sent: list[str], actor: str) -> Decision | None:
        """A tipline user's "helped" / "did not help" on the fact-checks ``sent`` for a post: a
        decision of origin ``tipline`` in the log, the item left as it is (the desk still
        decides it). Helped confirms the first sent (which one helped is not said); not helped
        rejects all of them. ``None`` when the post has no item or none of them is a candidate."""
        hit = self._hits(tenant, [post_id], _STORED_FIELDS).get(post_id)
        if hit is None:
            return None
        item = ReviewItem.from_hit(hit)
        shown = [c for c in item.candidates if c.factcheck_id in sent][: 1 if helped else None]
        if not shown:
            return None
        decision = decision_record(replace(item, candidates=tuple(shown)), decision_id="dec_" + secrets.token_hex(12),
                                   action=Action.CONFIRM if helped else Action.REJECT, actor=actor,
                                   origin=Origin.TIPLINE, at=self.clock(), to_status=item.status,
                                   factcheck_id=shown[0].factcheck_id if helped else None)
        self.store.put(self.log, decision.id, decision.to_source(), create=True, refresh=True)
        return decision

    def _check_manual(self, wanted: list[DecisionRequest], hits: dict[str, dict[str, Any]]) -> None:
        """A manual match's fact-check exists (the corpus is shared: ``plugin.owners``)."""
        ids = {d.factcheck_id for d in wanted if d.action is Action.MANUAL and d.factcheck_id}
        if not ids:
            return
        try:
            found = self.store.mget(self.settings.index, sorted(ids), source=["id"])
        except NotFound:
            found = {}
        if missing := sorted(ids - set(found)):
            raise NotFound(f"no fact-check with id {', '.join(repr(m[:200]) for m in missing[:10])}",
                           errors=[{"field": f"decisions[{i}].factcheck_id", "message": "no such fact-check",
                                    "type": "not_found"} for i, d in enumerate(wanted)
                                   if d.action is Action.MANUAL and d.factcheck_id in missing][:50])

    def _plan(self, d: DecisionRequest, hit: dict[str, Any], actor: str, origin: Origin,
              at: str) -> Planned:
        """``(hit, decision, the item after it)`` for one checked decision, or the error it meets."""
        item, action = ReviewItem.from_hit(hit), d.action
        status, last = item.status, item.last_decision
        if d.version is not None and d.version != item.version:
            raise DecisionConflict(f"review item {item.post_id[:200]!r} changed since version "
                                   f"{d.version[:40]!r} (it is {status.value}): nothing was recorded",
                                   decision=None if last is None else last.to_source())
        if d.version is None and status is not ReviewStatus.PENDING and action is not Action.UNDO:
            raise DecisionConflict(f"review item {item.post_id[:200]!r} was already decided "
                                   f"({status.value}, by {item.decided_by}): nothing was "
                                   f"recorded; undo it first to change it", decision=None if last is None else last.to_source())
        previous = last.from_status if action is Action.UNDO and last else None
        to_status = next_status(status, action, previous, has_candidates=bool(item.candidates))
        fc = d.factcheck_id
        if action is Action.CONFIRM and fc is None:
            fc = item.candidates[0].factcheck_id
        if action in (Action.CONFIRM, Action.REJECT) and fc is not None and item.candidate(fc) is None:
            raise InvalidRequest(f"fact-check {fc[:200]!r} is not a candidate of post "
                                 f"{item.post_id[:200]!r}; a fact-check found otherwise is a "
                                 f"manual match", errors=[{"field": "factcheck_id",
                                                           "message": "not a candidate", "type": "candidate"}])
        decision = decision_record(item, decision_id="dec_" + secrets.token_hex(12), action=action,
                                   actor=actor, origin=origin, at=at, to_status=to_status,
                                   factcheck_id=fc, note=d.note,
                                   supersedes=last.id if action is Action.UNDO and last else None)
        return hit, decision, decided_item(item, decision)

    def _write(self, tenant: str, planned: list[Planned]) -> Decided:
        """Items first, each over its version; then the decisions of those that moved. Both
        writes refresh at once (``refresh=true``, not ``wait_for``): a reviewer's next queue page
        must not show what they just decided, and waiting for the next scheduled refresh cost up
        to a second per decision, while decisions come at a person's pace."""
        actions = [{"_op_type": "index", "_index": self.items, "_id": hit["_id"], "_source": body.to_source(),
                    "if_seq_no": hit["_seq_no"], "if_primary_term": hit["_primary_term"]}
                   for hit, _, body in planned]
        moved, lost = [], []
        for (hit, decision, body), (ok, info) in zip(planned, self.store.bulk(actions, refresh=True)):
            if not ok and _status(info) != 409:  # not a race: OpenSearch refused the write
                raise BackendError(f"OpenSearch did not write review item "
                                   f"{hit['_source']['post_id'][:200]!r}: {str(info)[:300]}")
            (moved if ok else lost).append((hit, decision, body))
        recorded = [decision for _, decision, _ in moved]
        if recorded:
            log = [{"_op_type": "create", "_index": self.log, "_id": d.id, "_source": d.to_source()}
                   for d in recorded]
            for ok, info in self.store.bulk(log, refresh=True):
                if not ok:
                    raise BackendError(f"the decision log refused an entry: {str(info)[:300]}")
            if self.notify is not None:
                # each undo's item as read held the decision it took back
                undone = {d.id: ReviewItem.from_hit(hit).last_decision for hit, d, _ in moved if d.supersedes}
                self.notify(tenant, recorded, {d.post_id: body for _, d, body in moved},
                            {k: v for k, v in undone.items() if v is not None})
        now = self._hits(tenant, [h["_source"]["post_id"] for h, _, _ in lost]) if lost else {}
        not_recorded = []
        for hit, _, _ in lost:
            post_id = hit["_source"]["post_id"]
            winner = ReviewItem.from_hit(now[post_id]).last_decision if post_id in now else None
            not_recorded.append(NotRecorded(post_id, (
                f"changed while deciding: {winner.actor} decided it first "
                f"({winner.to_status.value if winner.to_status else None})"
                if winner else "changed while deciding"), winner))
        return Decided(recorded, not_recorded)

    # -- manual search and export --------------------------------------------------------------
    def search_factchecks(self, tenant: str, text: str, k: int = 10) -> list[dict[str, Any]]:
        """Fact-checks for a reviewer's search text (the one match path, so the same retrieval
        as the queue's candidates), best first."""
        from plugin.search.request import MatchRequest

        if self._search is None:
            raise NotFound("this process has no matcher for manual search")
        found = self._search(tenant, MatchRequest.from_mapping({"text": text, "k": k}))
        return [{"factcheck_id": c.id, "claim": c.fields.get("claim"), "rating": c.fields.get("rating"),
                 "publisher": c.fields.get("publisher"), "date": c.fields.get("published_at"),
                 "url": c.fields.get("url"), "lang": c.fields.get("lang"), "score": c.score}
                for c in found.candidates]

    def export(self, tenant: str, since: str | None = None, *,
               page_size: int = 500) -> Iterator[dict[str, object]]:
        """The tenant's decisions (made at or after ``since``) as training pairs, oldest first
        (by ``at``, then id); undone decisions and their undos teach nothing and are left out.

        Streams: a first pass reads only the undos and keeps the ids they took back (all it
        holds), the second pages through the log ``page_size`` decisions at a time. A decision
        undone between the two passes is still exported (the log as it was at the first)."""
        self.ensure()
        since = _iso(since, "since") if since else None
        undos = self.store.sorted_hits(self.log, q.export_query(tenant, since, undos=True), size=page_size)
        dropped = taken_back(h["_source"].get("supersedes") for h in undos)
        for hit in self.store.sorted_hits(self.log, q.export_query(tenant, since), size=page_size):
            if hit["_source"]["id"] not in dropped:
                yield from training_pairs(Decision.from_source(hit["_source"]))


def _status(info: Mapping[str, Any]) -> int | None:
    """The HTTP status of one bulk item's answer (``{"index": {"status": 409, …}}``)."""
    return next((v.get("status") for v in info.values() if isinstance(v, Mapping)), None)


def _iso(value: str, field: str) -> str:
    """``value`` when it is an ISO date or date-time (422 naming ``field`` otherwise)."""
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        raise InvalidRequest(f"{field}: {str(value)[:40]!r} is not an ISO date or date-time",
                             errors=[{"field": field, "message": "an ISO date", "type": "date"}]) from None
    return value
