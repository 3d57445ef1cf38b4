"""The matcher's side of a post's image: the texts it is matched by, its same-image search and
the hits that count, and what a result notes about it. Pure but for the lazy imports of
``plugin.image.queries``; the pure rules are ``plugin.search.images``'."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from plugin.search.images import OCR_PREFIX, counted_hits
from plugin.search.queries import filter_query

if TYPE_CHECKING:
    from plugin.image.model import ImageAnalysis
    from plugin.search.plan import MatchPlan
    from plugin.settings import Settings


def ocr_text(image: ImageAnalysis | None) -> str:
    """The text read from ``image`` (``""`` when none was)."""
    return (image.ocr.text if image is not None and image.ocr is not None else "") or ""


def post_text(text: str, image: ImageAnalysis | None) -> str:
    """A post's text as a whole, where one text stands for it (the claim verified, the desk's
    item, the memory of earlier posts): its own text, then the text read from its image."""
    return "\n".join(t for t in (text.strip(), ocr_text(image).strip()) if t)


def post_texts(text: str, image: ImageAnalysis | None,
               normalize: Callable[[str], str]) -> dict[str, str]:
    """The texts a post is matched by, normalised, by query-set prefix: ``""`` the post's own
    text (always, for a post without an image; the caption, when there is one, for a post with
    one) and ``ocr:`` the text read from its image, when any was."""
    out = {}
    if image is None or text.strip():
        out[""] = normalize(text) or text.strip()
    read = ocr_text(image)
    if read.strip():
        out[OCR_PREFIX] = normalize(read) or read.strip()
    return out


def same_image_body(image: ImageAnalysis | None, decided: MatchPlan,
                    settings: Settings) -> dict[str, Any] | None:
    """The same-image search for ``image`` (its query hashes within ``pdq_max_distance``, or its
    sha256), under the filters the text sub-queries use; ``None`` without an image."""
    if image is None:
        return None
    from plugin.image.queries import same_image_query

    flt = filter_query(decided.filters)
    return same_image_query(image.query_hashes, max_distance=settings.pdq_max_distance,
                            size=decided.size, sha256=image.sha256, filters=(flt,) if flt else ())


def image_hits(image: ImageAnalysis, response: dict[str, Any]) -> list[Any]:
    """The same-image hits of ``response`` that count for ``image`` (``images.counted_hits``)."""
    from plugin.image.queries import read_image_hits

    return counted_hits(read_image_hits(response), image.text_heavy, ocr_text(image))


def image_note(image: ImageAnalysis | None, texts: dict[str, str]) -> str | None:
    """What a result says about how its image could be matched, when not every way could."""
    if image is None:
        return None
    missing = []
    if image.ocr is not None and image.ocr.budget_spent:
        missing.append("reading the image's text stopped at its time budget (FACTSIEVE_OCR_BUDGET_S"
                       ", FACTSIEVE_OCR_API_BUDGET_S on the synchronous API): "
                       + ("the text read before then is matched" if OCR_PREFIX in texts
                          else "no text was read before then"))
    elif OCR_PREFIX not in texts:
        missing.append("no text was read from the image")
    if image.pdq is None:
        missing.append("the image has too little structure for a perceptual hash (only an "
                       "identical file matches it)")
    return "; ".join(missing) or None
