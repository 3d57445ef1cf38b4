"""What an image adds to a match, as pure functions over plain data.

A post with an image is matched by up to three query sets: its caption (the configuration's
retrievers, named as for any post, signal ``text``), the text read from its image (the same
retrievers named ``ocr:<retriever>``, weights × the configuration's ``ocr_weight``, signal
``ocr``), and its image hashes (one same-image search, signal ``same-image`` with the Hamming
distance). Here: the names of the OCR set, which same-image hits count (``counted_hits``: for
text-heavy images only when the OCR texts agree), how they join the fused list (first, by
distance: ``merge_image_hits``, ``pin_image_hits``), the view of a match that calibration reads
(``feature_view``), and the signals each match shows (``signals``).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from plugin.models import Fused, Hit
from plugin.search.duplicates import similar, words

#: the prefix of the OCR text's sub-queries in a match's contributions and ``explain``
OCR_PREFIX = "ocr:"
#: the contribution (and signal) of a same-image hit; its ``Hit.score`` is the Hamming distance
SAME_IMAGE = "same-image"
#: contributions that are neither the caption's nor the OCR text's retrievers
NOT_TEXT = frozenset({SAME_IMAGE})
#: word-set Jaccard from which two OCR texts agree: a hash hit between text-heavy images counts
#: only then (different text screenshots hash close together; a re-encoded copy reads the same
#: words, give or take OCR noise)
OCR_AGREEMENT = 0.5


class ImageHitLike(Protocol):
    """What this module reads of ``plugin.image.queries.ImageHit``."""

    id: str
    distance: int
    exact: bool
    text_heavy: bool
    ocr_text: str | None


def ocr_name(name: str) -> str:
    """The OCR set's name for a retriever (``bm25:post`` → ``ocr:bm25:post``)."""
    return OCR_PREFIX + name


def ocr_queries(bodies: Mapping[str, Any], weights: Mapping[str, float],
                stand_ins: Mapping[str, str], ocr_weight: float
                ) -> tuple[dict[str, Any], dict[str, float], dict[str, str]]:
    """The OCR text's sub-queries, weights and stand-ins, from those planned for it as if it were
    the post: every name prefixed, every weight × ``ocr_weight``."""
    return ({ocr_name(n): b for n, b in bodies.items()},
            {ocr_name(n): w * ocr_weight for n, w in weights.items()},
            {ocr_name(n): ocr_name(p) for n, p in stand_ins.items()})


def ocr_agrees(a: str | None, b: str | None, threshold: float = OCR_AGREEMENT) -> bool:
    """Whether two OCR texts read the same words (word-set Jaccard ≥ ``threshold``); an empty
    text agrees with nothing."""
    return similar(words(a or ""), words(b or ""), threshold)


def counted_hits(hits: Iterable[ImageHitLike], text_heavy: bool, ocr_text: str | None,
                 threshold: float = OCR_AGREEMENT) -> list[ImageHitLike]:
    """The same-image hits that count, by distance: a byte-identical image always; otherwise,
    when the post's image or the stored one is text-heavy, only when their OCR texts agree."""
    kept = [h for h in hits
            if h.exact or not (text_heavy or h.text_heavy) or ocr_agrees(ocr_text, h.ocr_text, threshold)]
    return sorted(kept, key=lambda h: (h.distance, h.id))


def merge_image_hits(fused: Sequence[Fused], hits: Sequence[ImageHitLike]) -> list[Fused]:
    """``fused`` with the same-image hits first, by distance (``pin_image_hits``): a fact-check
    found by text too keeps its text contributions and appears once."""
    if not hits:
        return list(fused)
    by_id = {f.id: f for f in fused}
    added = []
    for rank, h in enumerate(sorted(hits, key=lambda h: (h.distance, h.id)), start=1):
        if any(f.id == h.id for f in added):
            continue
        hit = Hit(id=h.id, score=float(h.distance), rank=rank, query=SAME_IMAGE)
        old = by_id.pop(h.id, None)
        contributions = {**(old.contributions if old else {}), SAME_IMAGE: hit}
        added.append(Fused(id=h.id, score=old.score if old else 0.0, rank=0, contributions=contributions))
    rest = [f for f in fused if f.id in by_id]
    return pin_image_hits(added + rest)


def pin_image_hits(fused: Sequence[Fused]) -> list[Fused]:
    """``fused`` with its same-image matches first, closest first, and the rest in their order
    after them; ranks renumbered from 1. A same-image match's score is raised to the list's best
    so that scores never rise down the list. Run again after reranking: the cross-encoder
    orders the text matches, a same-image match stays first."""
    pinned = sorted((f for f in fused if SAME_IMAGE in f.contributions),
                    key=lambda f: (f.contributions[SAME_IMAGE].score, f.id))
    if not pinned:
        return list(fused)
    rest = [f for f in fused if SAME_IMAGE not in f.contributions]
    best = max(f.score for f in fused)
    out = [Fused(id=f.id, score=best, rank=0, contributions=f.contributions) for f in pinned] + rest
    return [Fused(id=f.id, score=f.score, rank=i, contributions=f.contributions)
            for i, f in enumerate(out, start=1)]


def feature_view(fused: Sequence[Fused], *, caption: bool) -> list[Fused]:
    """The matches as calibration reads them (``calibration.candidate_features`` looks at the
    ``bm25:``/``dense:`` contributions): the caption's retrievers when the post has a caption,
    else the OCR text's, named as the caption's would be."""
    if caption:
        return list(fused)
    out = []
    for f in fused:
        contributions = {q.removeprefix(OCR_PREFIX): h for q, h in f.contributions.items()
                         if q.startswith(OCR_PREFIX)}
        out.append(Fused(id=f.id, score=f.score, rank=f.rank, contributions=contributions))
    return out


def signals(f: Fused) -> list[dict[str, Any]]:
    """What found a match, strongest first: ``same-image`` (with the Hamming distance), ``ocr``
    (the text read from the image), ``text`` (the post's own text)."""
    out: list[dict[str, Any]] = []
    same = f.contributions.get(SAME_IMAGE)
    if same is not None:
        out.append({"signal": SAME_IMAGE, "distance": int(same.score)})
    if any(q.startswith(OCR_PREFIX) for q in f.contributions):
        out.append({"signal": "ocr"})
    if any(not q.startswith(OCR_PREFIX) and q not in NOT_TEXT for q in f.contributions):
        out.append({"signal": "text"})
    return out
