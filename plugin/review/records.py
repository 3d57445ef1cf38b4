"""The review desk's records, typed between the stages: ``ReviewItem`` (one matched post in the
queue, with its candidates, version and decisions), ``Decision`` (one entry of the decision log)
and ``DecisionRequest`` (one checked decision a caller asked for).

Parsed from OpenSearch's ``_source`` at the store's edge (``from_source``) and written back only
at the edges: ``to_source`` is the stored document, ``to_dict`` the API's and the desk's JSON
(``api.schemas.ReviewItem``/``Decision``) and, through ``plugin.review.events``, the webhooks'.
Both write their keys in the order the documents have always had, so the JSON stays byte for
byte what it was (``tests/unit/review/test_snapshots.py``)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any, Self

from plugin.errors import DecisionConflict, InvalidRequest

class _Parsed(str, Enum):
    @classmethod
    def parse(cls, value: object, field: str) -> Self:
        """The member named ``value``; an unknown one is a 422 that lists the valid values."""
        try:
            return cls(value)
        except ValueError:
            valid = ", ".join(m.value for m in cls)
            message = f"{str(value)[:80]!r} is not one of {valid}"
            raise InvalidRequest(f"{field}: {message}", errors=[
                {"field": field, "message": message, "type": "enum"}]) from None


class Action(_Parsed):
    #: this candidate answers the post (``factcheck_id``; the top candidate when not given)
    CONFIRM = "confirm"
    #: the candidates are wrong (``factcheck_id``: that one; none given: all of them)
    REJECT = "reject"
    #: none of the shown candidates is right
    NONE = "none"
    #: the post makes no checkable claim
    NOT_A_CLAIM = "not_a_claim"
    #: a fact-check the reviewer found themselves answers the post (``factcheck_id`` required)
    MANUAL = "manual"
    #: take back the item's last decision: a new decision that supersedes it
    UNDO = "undo"


class ReviewStatus(_Parsed):
    PENDING = "pending"
    CONFIRMED = "confirmed"
    REJECTED = "rejected"
    NO_MATCH = "no_match"
    NOT_A_CLAIM = "not_a_claim"


class Origin(_Parsed):
    DESK = "desk"
    API = "api"
    #: a rule decided, not a person (the next issue)
    AUTO = "auto"
    #: the public on a tipline said an answer helped or not (``plugin.service.tipline``): logged
    #: beside the desk's, never moving an item; the learning weighs it below a person's
    TIPLINE = "tipline"


#: a JSON object as stored and shown (model versions, what found a candidate)
JsonObject = Mapping[str, object]


def version_token(hit: Mapping[str, Any]) -> str:
    """An item's version as the API shows it (opaque): its ``_seq_no`` and ``_primary_term``."""
    return f"{hit['_seq_no']}:{hit['_primary_term']}"


@dataclass(frozen=True)
class CandidateSignals:
    """Why a candidate matched (``model.signals_of``) and what found it (``found_by``:
    ``same-image`` with its distance, ``ocr``, ``text``; ``None`` when the stored item predates it)."""

    bm25_rank: int | None = None
    knn_similarity: float | None = None
    reranked: bool = False
    rerank_score: float | None = None
    found_by: tuple[JsonObject, ...] | None = None

    @classmethod
    def from_source(cls, src: Mapping[str, Any] | None) -> CandidateSignals | None:
        """``None`` for the empty object a decision that chose no candidate stores."""
        if not src:
            return None
        found = src.get("found_by")
        return cls(bm25_rank=src.get("bm25_rank"), knn_similarity=src.get("knn_similarity"),
                   reranked=bool(src.get("reranked")), rerank_score=src.get("rerank_score"),
                   found_by=None if found is None else tuple(dict(f) for f in found))

    def to_source(self) -> dict[str, object]:
        out: dict[str, object] = {"bm25_rank": self.bm25_rank, "knn_similarity": self.knn_similarity,
                                  "reranked": self.reranked, "rerank_score": self.rerank_score}
        if self.found_by is not None:
            out["found_by"] = [dict(f) for f in self.found_by]
        return out


def _signals_source(signals: CandidateSignals | None) -> dict[str, object]:
    return {} if signals is None else signals.to_source()


@dataclass(frozen=True)
class ShownCandidate:
    """A candidate as a decision's snapshot keeps it: enough to become a training pair."""

    factcheck_id: str
    rank: int | None = None
    score: float | None = None
    confidence: float | None = None
    #: the packaged confidence beside a tenant's recalibrated one (``plugin.learn``)
    confidence_packaged: float | None = None
    signals: CandidateSignals | None = None

    @classmethod
    def from_source(cls, src: Mapping[str, Any]) -> ShownCandidate:
        return cls(factcheck_id=src["factcheck_id"], rank=src.get("rank"), score=src.get("score"),
                   confidence=src.get("confidence"), confidence_packaged=src.get("confidence_packaged"),
                   signals=CandidateSignals.from_source(src.get("signals")))

    def to_source(self) -> dict[str, object]:
        return {"factcheck_id": self.factcheck_id, "rank": self.rank, "score": self.score,
                "confidence": self.confidence, "confidence_packaged": self.confidence_packaged,
                "signals": None if self.signals is None else self.signals.to_source()}


@dataclass(frozen=True)
class ReviewCandidate(ShownCandidate):
    """One of a review item's candidates: its place (``ShownCandidate``, what a decision keeps of
    it) and the fact-check as the reviewer sees it."""

    claim: str | None = None
    rating: str | None = None
    publisher: str | None = None
    date: str | None = None
    url: str | None = None
    lang: str | None = None

    @classmethod
    def from_source(cls, src: Mapping[str, Any]) -> ReviewCandidate:
        place = ShownCandidate.from_source(src)
        return cls(**vars(place), **{k: src.get(k) for k in _SHOWN_FACTCHECK})

    def to_source(self) -> dict[str, object]:
        place = self.shown().to_source()
        return {"factcheck_id": self.factcheck_id, **{k: getattr(self, k) for k in _SHOWN_FACTCHECK},
                **{k: v for k, v in place.items() if k != "factcheck_id"}}

    def shown(self) -> ShownCandidate:
        return ShownCandidate(**{f.name: getattr(self, f.name) for f in fields(ShownCandidate)})


#: the fact-check's fields a review candidate shows, in its stored order (after ``factcheck_id``)
_SHOWN_FACTCHECK = ("claim", "rating", "publisher", "date", "url", "lang")


@dataclass(frozen=True)
class ReviewImage:
    """What an item keeps of its post's image: its identity, the text read from it, and the size
    of the desk's thumbnail (whose bytes are ``ReviewItem.image_thumbnail``)."""

    sha256: str
    width: int
    height: int
    ocr_text: str = ""
    #: ``{"width", "height"}`` of the thumbnail, ``None`` without one
    thumbnail: Mapping[str, int] | None = None

    @classmethod
    def from_source(cls, src: Mapping[str, Any] | None) -> ReviewImage | None:
        if src is None:
            return None
        thumb = src.get("thumbnail")
        return cls(sha256=src["sha256"], width=src["width"], height=src["height"],
                   ocr_text=src.get("ocr_text") or "", thumbnail=None if thumb is None else dict(thumb))

    def to_source(self) -> dict[str, object]:
        return {"sha256": self.sha256, "width": self.width, "height": self.height, "ocr_text": self.ocr_text,
                "thumbnail": None if self.thumbnail is None else dict(self.thumbnail)}


@dataclass(frozen=True)
class Decision:
    """One entry of the decision log (``model.decision_record``): who decided what on which
    item, and the item's candidates, scores and model versions then (``candidates``: ``None``
    when read without them, as the queue reads an item's last decision)."""

    id: str
    tenant: str
    post_id: str
    action: Action
    actor: str
    at: str
    origin: Origin
    from_status: ReviewStatus | None = None
    to_status: ReviewStatus | None = None
    post_text: str | None = None
    post_lang: str | None = None
    factcheck_id: str | None = None
    config: str | None = None
    versions: JsonObject = field(default_factory=dict)
    #: the chosen candidate's place, when the decision named one of the shown candidates
    rank: int | None = None
    score: float | None = None
    confidence: float | None = None
    signals: CandidateSignals | None = None
    candidates: tuple[ShownCandidate, ...] | None = ()
    note: str | None = None
    supersedes: str | None = None

    @property
    def undoes(self) -> bool:
        return self.action is Action.UNDO

    @classmethod
    def from_source(cls, src: Mapping[str, Any]) -> Decision:
        cands = src.get("candidates")
        return cls(id=src["id"], tenant=src.get("tenant") or "", post_id=src["post_id"],
                   action=Action(src["action"]), actor=src["actor"], at=src["at"], origin=Origin(src["origin"]),
                   from_status=_status(src.get("from_status")), to_status=_status(src.get("to_status")),
                   post_text=src.get("post_text"), post_lang=src.get("post_lang"),
                   factcheck_id=src.get("factcheck_id"), config=src.get("config"),
                   versions=dict(src.get("versions") or {}), rank=src.get("rank"), score=src.get("score"),
                   confidence=src.get("confidence"), signals=CandidateSignals.from_source(src.get("signals")),
                   candidates=None if cands is None else tuple(ShownCandidate.from_source(c) for c in cands),
                   note=src.get("note"), supersedes=src.get("supersedes"))

    def to_source(self) -> dict[str, object]:
        """The decision log's document (and the API's and a webhook's ``decision``)."""
        out: dict[str, object] = {
            "id": self.id, "tenant": self.tenant, "post_id": self.post_id, "post_text": self.post_text,
            "post_lang": self.post_lang, "factcheck_id": self.factcheck_id, "action": self.action.value,
            "actor": self.actor, "at": self.at, "origin": self.origin.value, "config": self.config,
            "versions": dict(self.versions), "rank": self.rank, "score": self.score,
            "confidence": self.confidence, "signals": _signals_source(self.signals)}
        if self.candidates is not None:
            out["candidates"] = [c.to_source() for c in self.candidates]
        out.update(note=self.note, supersedes=self.supersedes,
                   from_status=None if self.from_status is None else self.from_status.value,
                   to_status=None if self.to_status is None else self.to_status.value)
        return out

    def to_dict(self, *, candidates: bool = True) -> dict[str, object]:
        """The API's JSON of the decision; ``candidates=False``: without the candidate snapshot
        (an item's ``last_decision``, a webhook's ``decision``)."""
        out = self.to_source()
        if not candidates:
            out.pop("candidates", None)
        return out


def _status(value: str | None) -> ReviewStatus | None:
    return None if value is None else ReviewStatus(value)


@dataclass(frozen=True)
class ReviewItem:
    """One (tenant, post) in the review queue (``model.item_record`` makes a new one).
    ``version`` is set when read from the store (send it back with a decision); ``decisions``
    only by ``ReviewDesk.item`` (the post's log, oldest first)."""

    post_id: str
    tenant: str
    text: str
    status: ReviewStatus
    created_at: str
    lang: str | None = None
    date: str | None = None
    source_url: str | None = None
    #: the top candidate's confidence; ``None`` without candidates (sorted after every scored item)
    confidence: float | None = None
    decided_at: str | None = None
    decided_by: str | None = None
    config: str | None = None
    versions: JsonObject = field(default_factory=dict)
    candidates: tuple[ReviewCandidate, ...] = ()
    last_decision: Decision | None = None
    image: ReviewImage | None = None
    #: the desk's JPEG thumbnail (base64); only the desk's image route reads it, never shown
    image_thumbnail: str | None = None
    version: str | None = None
    decisions: tuple[Decision, ...] | None = None

    def candidate(self, factcheck_id: str | None) -> ReviewCandidate | None:
        return next((c for c in self.candidates if c.factcheck_id == factcheck_id), None)

    @classmethod
    def from_source(cls, src: Mapping[str, Any], version: str | None = None) -> ReviewItem:
        last = src.get("last_decision")
        return cls(post_id=src["post_id"], tenant=src["tenant"], text=src.get("text") or "",
                   status=ReviewStatus(src["status"]), created_at=src["created_at"], lang=src.get("lang"),
                   date=src.get("date"), source_url=src.get("source_url"), confidence=src.get("confidence"),
                   decided_at=src.get("decided_at"), decided_by=src.get("decided_by"), config=src.get("config"),
                   versions=dict(src.get("versions") or {}),
                   candidates=tuple(ReviewCandidate.from_source(c) for c in src.get("candidates") or ()),
                   last_decision=Decision.from_source(last) if last else None,
                   image=ReviewImage.from_source(src.get("image")), image_thumbnail=src.get("image_thumbnail"),
                   version=version)

    @classmethod
    def from_hit(cls, hit: Mapping[str, Any]) -> ReviewItem:
        """An item as the store answered it, with its version."""
        return cls.from_source(hit["_source"], version_token(hit))

    def to_source(self) -> dict[str, object]:
        """The stored document."""
        return {"post_id": self.post_id, "tenant": self.tenant, "text": self.text, "lang": self.lang,
                "date": self.date, "source_url": self.source_url, "status": self.status.value,
                "confidence": self.confidence, "created_at": self.created_at, "decided_at": self.decided_at,
                "decided_by": self.decided_by, "config": self.config, "versions": dict(self.versions),
                "candidates": [c.to_source() for c in self.candidates],
                "last_decision": None if self.last_decision is None else self.last_decision.to_source(),
                "image": None if self.image is None else self.image.to_source(),
                "image_thumbnail": self.image_thumbnail}

    def to_dict(self) -> dict[str, object]:
        """The API's and the desk's JSON: the stored fields but the thumbnail, the last decision
        without its candidate snapshot, the ``version``, and ``decisions`` where they were read."""
        src = self.to_source()
        out = {k: src[k] for k in _SHOWN}
        out["last_decision"] = None if self.last_decision is None else self.last_decision.to_dict(candidates=False)
        if self.version is not None:
            out["version"] = self.version
        if self.decisions is not None:
            out["decisions"] = [d.to_dict() for d in self.decisions]
        return out


#: an item's stored fields the API shows, in its order (``last_decision`` follows them)
_SHOWN = ("post_id", "tenant", "text", "lang", "date", "source_url", "status", "confidence", "created_at",
          "decided_at", "decided_by", "config", "versions", "candidates", "image")


@dataclass(frozen=True)
class ReviewPage:
    """A page of a tenant's queue: its items, the cursor of the next page (``None`` on the last),
    and the faceted counts (``queries.counts_of``)."""

    items: tuple[ReviewItem, ...]
    next: str | None
    counts: Mapping[str, Mapping[str, int]]

    def to_dict(self) -> dict[str, object]:
        return {"items": [i.to_dict() for i in self.items], "next": self.next,
                "counts": {k: dict(v) for k, v in self.counts.items()}}


@dataclass(frozen=True)
class DecisionRequest:
    """One decision a caller asked for, checked (``model.validate_decisions``)."""

    post_id: str
    action: Action
    factcheck_id: str | None = None
    note: str | None = None
    #: the item's version as the caller read it (a changed item is then a 409)
    version: str | None = None


@dataclass(frozen=True)
class NotRecorded:
    """An item another request changed between a batch's read and its write: nothing was
    recorded for it, and ``decision`` is the one that won (``None`` when none is known)."""

    post_id: str
    reason: str
    decision: Decision | None = None

    def to_dict(self) -> dict[str, object]:
        return {"post_id": self.post_id, "decision": None if self.decision is None else self.decision.to_dict(),
                "reason": self.reason}


@dataclass(frozen=True)
class Decided:
    """What a batch of decisions did. ``recorded``: the decisions written (their webhooks sent);
    ``not_recorded``: each item another request changed between our read and our write, which
    records nothing for it. Both non-empty is a *partial* result, which the API answers with 207."""

    recorded: list[Decision]
    not_recorded: list[NotRecorded] = field(default_factory=list)

    @property
    def partial(self) -> bool:
        return bool(self.recorded and self.not_recorded)

    def conflict(self) -> DecisionConflict:
        """A race found while writing, as an error: the first lost item's winning decision, what
        of the batch was ``recorded`` and which items were ``not_recorded`` (as their JSON:
        ``plugin.errors`` knows no records)."""
        lost = self.not_recorded
        first = lost[0].decision if lost else None
        return DecisionConflict(
            f"review item{'s' if len(lost) > 1 else ''} {', '.join(repr(n.post_id[:200]) for n in lost[:10])} "
            f"changed while deciding: {len(self.recorded)} of {len(self.recorded) + len(lost)} recorded",
            decision=None if first is None else first.to_source(),
            recorded=[d.to_source() for d in self.recorded], not_recorded=[n.to_dict() for n in lost])


def decisions_of(sources: Sequence[Mapping[str, Any]]) -> tuple[Decision, ...]:
    """Decisions read from the log's hits' sources (the store's edge)."""
    return tuple(Decision.from_source(s) for s in sources)
