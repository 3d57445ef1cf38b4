"""The review queue's states, the actions a reviewer takes, and the decision records they make.

Pure: no client, no clock, no ids made here (the caller passes ``at`` and ``decision_id``).
``next_status`` is the one place that says which action a state allows; everything that decides
an item (the API, the desk page, the auto rules of the next issue) goes through it.
"""
from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from plugin.errors import ContentTooLarge, InvalidRequest
from plugin.review.records import (Action, CandidateSignals, Decision, DecisionRequest, Origin,
                                   ReviewCandidate, ReviewImage, ReviewItem, ReviewStatus)

if TYPE_CHECKING:
    from plugin.image.model import ImageAnalysis
    from plugin.review.records import ShownCandidate
    from plugin.search.result import Candidate

#: how many of a post's matches a review item keeps: the ones a reviewer can confirm by key (1–5)
MAX_CANDIDATES = 5


#: the state each deciding action puts a pending item in
DECIDES: dict[Action, ReviewStatus] = {
    Action.CONFIRM: ReviewStatus.CONFIRMED, Action.MANUAL: ReviewStatus.CONFIRMED,
    Action.REJECT: ReviewStatus.REJECTED, Action.NONE: ReviewStatus.NO_MATCH,
    Action.NOT_A_CLAIM: ReviewStatus.NOT_A_CLAIM,
}
#: the webhook event a decision sends (``plugin.events.Event`` values); none for
#: ``not_a_claim``. Every undo sends ``match.undone``, naming the decision it took back
EVENTS: dict[Action, str] = {Action.CONFIRM: "match.confirmed", Action.MANUAL: "match.confirmed",
                             Action.REJECT: "match.rejected", Action.NONE: "match.rejected",
                             Action.UNDO: "match.undone"}
#: actions that name a fact-check: required for ``manual``, optional for the others listed
NAMES_FACTCHECK = {Action.CONFIRM, Action.REJECT, Action.MANUAL}
#: actions about the shown candidates: an item the matcher found none for does not take them
ON_CANDIDATES = {Action.CONFIRM, Action.REJECT}


def next_status(status: ReviewStatus, action: Action, previous: ReviewStatus | None = None,
                has_candidates: bool = True) -> ReviewStatus:
    """The state ``action`` moves an item in ``status`` to.

    A pending item takes any deciding action, except that one without candidates (the matcher
    found none) takes no ``confirm`` or ``reject``: there is nothing shown to confirm or reject,
    so ``none``, ``not_a_claim`` or a ``manual`` match. A decided item takes only ``undo``, which
    returns it to ``previous`` (the state before the decision it takes back; pending when not
    known). Anything else is a 422 naming the state and what it allows: a decided item is undone
    first, never silently re-decided."""
    if status is ReviewStatus.PENDING and action in DECIDES and (has_candidates or action not in ON_CANDIDATES):
        return DECIDES[action]
    if status is not ReviewStatus.PENDING and action is Action.UNDO:
        return previous or ReviewStatus.PENDING
    if status is ReviewStatus.PENDING and action in ON_CANDIDATES:
        allowed = ", ".join(a.value for a in DECIDES if a not in ON_CANDIDATES)
        raise InvalidRequest(f"action {action.value!r} is not allowed on an item without "
                             f"candidates (the matcher found none); it allows: {allowed}",
                             errors=[{"field": "action", "message": "the item has no candidates",
                                      "type": "state"}])
    allowed = "undo" if status is not ReviewStatus.PENDING else ", ".join(a.value for a in DECIDES)
    raise InvalidRequest(f"action {action.value!r} is not allowed on an item that is "
                         f"{status.value}; it allows: {allowed}",
                         errors=[{"field": "action", "message": f"not allowed in state {status.value}",
                                  "type": "state"}])


# -- what a match result becomes -------------------------------------------------------------------
def signals_of(explain: Mapping[str, Any] | None, reranked: bool) -> dict[str, Any]:
    """Why a candidate matched, from a match's ``explain`` (``plugin.search.result.match_dict``):
    its best BM25 rank (1-based) over the BM25 sub-queries, its best kNN score over the dense
    ones (OpenSearch's similarity score), and the cross-encoder's score when it was reranked.
    ``None`` where the match did not say (a server-fused match carries no sub-query scores).
    The sub-queries over the text read from a post's image (``ocr:…``) count as the others."""
    explain = explain or {}
    bm25 = [v["rank"] for k, v in explain.items() if k.removeprefix("ocr:").startswith("bm25:") and "rank" in v]
    knn = [v["score"] for k, v in explain.items() if k.removeprefix("ocr:").startswith("dense:") and "score" in v]
    rerank = (explain.get("rerank") or {}).get("score")
    return {"bm25_rank": min(bm25) if bm25 else None, "knn_similarity": max(knn) if knn else None,
            "reranked": bool(reranked and rerank is not None), "rerank_score": rerank}


def candidates_of(matches: Iterable[Candidate], reranked: bool,
                  limit: int = MAX_CANDIDATES) -> tuple[ReviewCandidate, ...]:
    """A review item's candidates from a match's candidates, best first."""
    out = []
    for i, m in enumerate(matches):
        if i >= limit:
            break
        f = m.fields
        why = signals_of(m.explain, reranked)
        out.append(ReviewCandidate(
            factcheck_id=m.id, claim=f.get("claim"), rating=f.get("rating"), publisher=f.get("publisher"),
            date=f.get("published_at"), url=f.get("url"), lang=f.get("lang"), rank=m.rank, score=m.score,
            confidence=m.confidence, confidence_packaged=m.confidence_packaged,  # plugin.learn
            # what found it: same-image (with its distance), ocr, text
            signals=CandidateSignals(**why, found_by=tuple(m.signals or ()))))
    return tuple(out)


def item_record(*, tenant: str, post_id: str, text: str, lang: str | None, date: str | None,
                source_url: str | None, config: str | None, versions: Mapping[str, object],
                candidates: Sequence[ReviewCandidate], created_at: str,
                image: ImageAnalysis | None = None) -> ReviewItem:
    """A new pending review item. Without candidates its ``confidence`` is ``None``: the queue
    sorts it after every scored item and no confidence filter selects it."""
    shown, thumbnail = image_fields(image)
    return ReviewItem(post_id=post_id, tenant=tenant, text=text, lang=lang, date=date,
                      source_url=source_url, status=ReviewStatus.PENDING,
                      confidence=candidates[0].confidence if candidates else None, created_at=created_at,
                      config=config, versions=dict(versions), candidates=tuple(candidates),
                      image=shown, image_thumbnail=thumbnail)


def image_fields(image: ImageAnalysis | None) -> tuple[ReviewImage | None, str | None]:
    """What an item keeps of its post's image: its identity and the text read from it (shown by
    the API and the desk), and the desk's small JPEG (base64), which only the desk's image route
    reads. Both ``None`` for a post without an image."""
    if image is None:
        return None, None
    thumb = image.thumbnail
    return (ReviewImage(sha256=image.sha256, width=image.width, height=image.height,
                        ocr_text=image.ocr.text if image.ocr is not None else "",
                        thumbnail=None if thumb is None else {"width": thumb.width, "height": thumb.height}),
            None if thumb is None else base64.b64encode(thumb.data).decode("ascii"))


def decision_record(item: ReviewItem, *, decision_id: str, action: Action, actor: str,
                    origin: Origin, at: str, to_status: ReviewStatus,
                    factcheck_id: str | None = None, note: str | None = None,
                    supersedes: str | None = None) -> Decision:
    """One entry of the decision log: who decided what on which item, and what the item's
    candidates, scores and model versions were then (``candidates``, and the chosen one's rank,
    score, confidence and signals), so it becomes a training pair without re-running anything."""
    chosen = item.candidate(factcheck_id) if factcheck_id else None
    return Decision(id=decision_id, tenant=item.tenant, post_id=item.post_id, action=action, actor=actor,
                    at=at, origin=origin, from_status=item.status, to_status=to_status,
                    post_text=item.text, post_lang=item.lang, factcheck_id=factcheck_id,
                    config=item.config, versions=dict(item.versions),
                    rank=chosen.rank if chosen else None, score=chosen.score if chosen else None,
                    confidence=chosen.confidence if chosen else None,
                    signals=chosen.signals if chosen else None,
                    candidates=tuple(c.shown() for c in item.candidates), note=note, supersedes=supersedes)


def decided_item(item: ReviewItem, decision: Decision) -> ReviewItem:
    """The item after ``decision`` (an undo clears who decided it)."""
    undone = decision.undoes
    return replace(item, status=decision.to_status or item.status,
                   decided_at=None if undone else decision.at,
                   decided_by=None if undone else decision.actor, last_decision=decision)


def training_pairs(decision: Decision) -> list[dict[str, object]]:
    """What one decision teaches, as ``(post, fact-check, label)`` rows (the export's JSON): a
    confirm or manual is a positive for its fact-check (and, for confirm, a negative for every
    other candidate shown above it); a reject a negative for the one named, or for all when none
    is; ``none`` a negative for every candidate. ``not_a_claim`` and ``undo`` teach no pair (an
    undone decision is dropped by the export, ``superseded``)."""
    action, fc = decision.action, decision.factcheck_id
    cands = decision.candidates or ()
    base = {"decision_id": decision.id, "post_id": decision.post_id, "post_text": decision.post_text,
            "post_lang": decision.post_lang, "actor": decision.actor, "at": decision.at,
            "origin": decision.origin.value, "versions": dict(decision.versions)}

    def row(c: ShownCandidate | None, fid: str, label: int) -> dict[str, object]:
        return {**base, "factcheck_id": fid, "label": label, "rank": c.rank if c else None,
                "score": c.score if c else None, "confidence": c.confidence if c else None,
                "signals": c.signals.to_source() if c and c.signals else {}}

    def named(fid: str) -> ShownCandidate | None:
        return next((c for c in cands if c.factcheck_id == fid), None)

    if action in (Action.CONFIRM, Action.MANUAL) and fc:
        chosen = named(fc)
        above = [] if action is Action.MANUAL or chosen is None or chosen.rank is None else \
            [c for c in cands if c.rank is not None and c.rank < chosen.rank]
        return [row(chosen, fc, 1)] + [row(c, c.factcheck_id, 0) for c in above]
    if action is Action.REJECT and fc:
        return [row(named(fc), fc, 0)]
    if action in (Action.REJECT, Action.NONE):
        return [row(c, c.factcheck_id, 0) for c in cands]
    return []


def superseded(decisions: Iterable[Decision]) -> set[str]:
    """Ids of the decisions that ``decisions`` took back: they teach nothing (nor does an undo
    itself, ``training_pairs``)."""
    return taken_back(d.supersedes for d in decisions)


def taken_back(supersedes: Iterable[str | None]) -> set[str]:
    """The decision ids named by undos' ``supersedes`` (``None``: not an undo). All the export
    holds in memory: its first pass reads only ``supersedes`` of each undo (``_source``
    filtered, so no ``Decision`` can be parsed from it) and hands the values here."""
    return {s for s in supersedes if s}


#: what a decision may carry; anything else is a 422 naming the field
DECISION_FIELDS = frozenset({"post_id", "factcheck_id", "action", "note", "version"})


def _err(i: int, field: str, message: str, kind: str) -> dict[str, str]:
    return {"field": f"decisions[{i}].{field}", "message": message, "type": kind}


def validate_decisions(decisions: object, bulk_max: int, note_max: int) -> list[DecisionRequest]:
    """``decisions`` checked whole (pure): a 413 past ``bulk_max`` (FACTSIEVE_REVIEW_BULK_MAX),
    else a 422 naming every bad field of every decision; each ``action`` parsed."""
    if not isinstance(decisions, list) or not decisions:
        raise InvalidRequest("send one decision or a list of them", errors=[
            {"field": "decisions", "message": "at least one decision", "type": "missing"}])
    limit = bulk_max
    if len(decisions) > limit:
        raise ContentTooLarge(f"{len(decisions)} decisions in one request; at most {limit} "
                              f"(FACTSIEVE_REVIEW_BULK_MAX)")
    errors: list[dict[str, str]] = []
    seen: set[str] = set()
    out = []
    for i, d in enumerate(decisions):
        if not isinstance(d, dict):
            errors.append(_err(i, "(decision)", "must be an object", "type"))
            continue
        errors += [_err(i, k[:40], "unknown field", "extra_forbidden") for k in d if k not in DECISION_FIELDS]
        post_id, action, fc = d.get("post_id"), d.get("action"), d.get("factcheck_id")
        if not isinstance(post_id, str) or not post_id.strip() or len(post_id) > 512:
            errors.append(_err(i, "post_id", "a post id of 1 to 512 characters", "string"))
        elif post_id in seen:
            errors.append(_err(i, "post_id", "decided twice in one request", "duplicate"))
        else:
            seen.add(post_id)
        try:
            act = Action.parse(action, f"decisions[{i}].action")
        except InvalidRequest as exc:
            errors += exc.errors
            act = None
        if fc is not None and (not isinstance(fc, str) or not fc or len(fc) > 512):
            errors.append(_err(i, "factcheck_id", "a fact-check id of 1 to 512 characters", "string"))
        elif act is Action.MANUAL and fc is None:
            errors.append(_err(i, "factcheck_id", "manual names the fact-check", "missing"))
        elif act is not None and fc is not None and act not in NAMES_FACTCHECK:
            errors.append(_err(i, "factcheck_id", f"{act.value} takes no fact-check", "extra"))
        note = d.get("note")
        if note is not None and not isinstance(note, str):
            errors.append(_err(i, "note", "must be a string", "string"))
        elif note is not None and len(note) > note_max:
            errors.append(_err(i, "note", f"{len(note)} characters; at most "
                               f"{note_max} "
                               f"(FACTSIEVE_REVIEW_NOTE_MAX_CHARS)", "too_long"))
        if d.get("version") is not None and not isinstance(d.get("version"), str):
            errors.append(_err(i, "version", "the item's version as the API gave it", "string"))
        if act is not None:
            out.append(DecisionRequest(post_id=post_id, action=act, factcheck_id=fc, note=note,
                                       version=d.get("version")))
    if errors:
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors[:5])
        raise InvalidRequest(f"invalid decisions: {detail}", errors=errors[:50])
    return out
