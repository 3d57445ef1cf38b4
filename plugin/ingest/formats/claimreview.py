"""schema.org ClaimReview (JSON-LD: a single node, a list, ``@graph``) and Google Fact Check
Tools ``claims:search`` responses, which carry the same facts under other names.

A review's image is the image its claim appeared in (``itemReviewed.appearance`` as an
ImageObject, or an appearance's ``image``), else the review's own ``image``: a URL string or an
ImageObject (``contentUrl``, else ``url``); ingest fetches it (``plugin.ingest.images``).

JSON-LD is read as plain JSON, not expanded: ``@type`` is matched on its local name
("ClaimReview", "schema:ClaimReview" or the full IRI) and ``{"@id": ...}`` references are
followed within the same document only.
"""
from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Any

from plugin.ingest.formats.base import BadRecord, RawRecord, Unreadable, guarded, json_kind

#: Language names fact-checkers put in ``inLanguage`` instead of a code (lower-cased).
_LANGUAGE_NAMES = {
    "english": "en", "spanish": "es", "español": "es", "espanol": "es", "french": "fr",
    "français": "fr", "francais": "fr", "german": "de", "deutsch": "de", "portuguese": "pt",
    "português": "pt", "portugues": "pt", "arabic": "ar", "turkish": "tr", "türkçe": "tr",
    "polish": "pl", "polski": "pl", "thai": "th", "malay": "ms", "bahasa melayu": "ms",
    "korean": "ko", "한국어": "ko", "hindi": "hi", "indonesian": "id", "bahasa indonesia": "id",
    "italian": "it", "italiano": "it", "dutch": "nl", "nederlands": "nl", "russian": "ru",
    "ukrainian": "uk", "chinese": "zh", "japanese": "ja", "bengali": "bn", "tamil": "ta",
    "telugu": "te", "marathi": "mr", "gujarati": "gu", "kannada": "kn", "malayalam": "ml",
    "punjabi": "pa", "urdu": "ur", "persian": "fa", "farsi": "fa", "tagalog": "tl",
    "filipino": "tl", "vietnamese": "vi", "greek": "el", "czech": "cs", "romanian": "ro",
    "hungarian": "hu", "swedish": "sv", "norwegian": "no", "danish": "da", "finnish": "fi",
    "hebrew": "he", "serbian": "sr", "croatian": "hr", "slovak": "sk", "bulgarian": "bg",
    "catalan": "ca", "swahili": "sw", "burmese": "my", "nepali": "ne", "sinhala": "si",
}
_LANG_CODE = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]+)*")
_NUMBER = re.compile(r"\s*-?\d+(?:[.,]\d+)?\s*")


def _local_types(node: dict[str, Any]) -> set[str]:
    """``@type`` as a set of local names: "ClaimReview", "schema:ClaimReview", full IRIs, lists."""
    raw = node.get("@type")
    types = raw if isinstance(raw, list) else [raw]
    return {re.split(r"[/:#]", t)[-1] for t in types if isinstance(t, str)}


def _is_claimreview(node: Any) -> bool:
    return isinstance(node, dict) and "ClaimReview" in _local_types(node)


def _is_google(node: Any) -> bool:
    return isinstance(node, dict) and "@type" not in node and isinstance(node.get("claims"), list)


def _nodes(doc: Any, depth: int = 0) -> Iterator[Any]:
    """Top-level nodes in document order: list items and ``@graph`` members, flattened.

    Only a few levels deep (a list of pages with graphs is the deepest real shape), so a
    pathologically nested document cannot exhaust the stack.
    """
    if depth > 4:
        yield doc
    elif isinstance(doc, list):
        for item in doc:
            yield from _nodes(item, depth + 1)
    elif isinstance(doc, dict) and isinstance(doc.get("@graph"), list):
        if _local_types(doc):
            yield doc  # a typed node that also carries a graph: both count
        yield from _nodes(doc["@graph"], depth + 1)
    else:
        yield doc


def _text(value: Any) -> str | None:
    """A plain string from a JSON-LD value: string, number, ``{"@value": ...}`` or list of them."""
    if isinstance(value, list):
        for item in value:
            text = _text(item)
            if text:
                return text
        return None
    if isinstance(value, dict):
        return _text(value.get("@value"))
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return str(value)
    return value if isinstance(value, str) and value.strip() else None


def _deref(value: Any, index: dict[str, dict[str, Any]]) -> Any:
    """Follow an ``{"@id": ...}`` reference to the node it names in the same document."""
    if (isinstance(value, dict) and isinstance(value.get("@id"), str)
            and not set(value) - {"@id", "@type"}):
        return index.get(value["@id"], value)
    return value


def _first(value: Any, index: dict[str, dict[str, Any]]) -> Any:
    if isinstance(value, list):
        value = value[0] if value else None
    return _deref(value, index)


def _found(value: Any, index: dict[str, dict[str, Any]], read: Any) -> str | None:
    """What ``read`` finds in a node (a referenced one followed), a string as it is, or the first
    of a list where it finds something."""
    if isinstance(value, list):
        return next((found for item in value if (found := _found(item, index, read))), None)
    value = _deref(value, index)
    return read(value) if isinstance(value, dict) else _text(value)


def _name(value: Any, index: dict[str, dict[str, Any]]) -> str | None:
    """An author/publisher name: a string, a node with ``name``, or the first of a list."""
    return _found(value, index, lambda node: _text(node.get("name")) or _text(node.get("alternateName")))


def _image_url(value: Any, index: dict[str, dict[str, Any]]) -> str | None:
    """An image's URL: a string, an ImageObject (``contentUrl``, else ``url``), or the first of a
    list that has one."""
    return _found(value, index, lambda node: _text(node.get("contentUrl")) or _text(node.get("url")))


def _language(value: Any) -> tuple[str | None, str | None]:
    """``(code, unmapped)`` from ``inLanguage``: a code, a language name, or a Language node."""
    if isinstance(value, list):
        value = value[0] if value else None
    candidates = ([value.get("alternateName"), value.get("name")] if isinstance(value, dict)
                  else [value])
    texts = [t for t in (_text(c) for c in candidates) if t]
    for text in texts:
        if _LANG_CODE.fullmatch(text.strip()):
            return text.strip(), None
        code = _LANGUAGE_NAMES.get(text.strip().lower())
        if code:
            return code, None
    return None, (texts[0] if texts else None)


def _claimreview_data(node: dict[str, Any], index: dict[str, dict[str, Any]]) -> dict[str, Any]:
    claim = _text(node.get("claimReviewed"))
    if claim is None:
        raise BadRecord("ClaimReview without claimReviewed")
    extra: dict[str, Any] = {}
    rating = None
    review = _first(node.get("reviewRating"), index)
    if isinstance(review, dict):
        value = _text(review.get("ratingValue"))
        rating = _text(review.get("alternateName")) or _text(review.get("name"))
        if rating is None and value is not None and not _NUMBER.fullmatch(value):
            rating = value
        for key, out in (("ratingValue", "rating_value"), ("bestRating", "best_rating"),
                         ("worstRating", "worst_rating")):
            if review.get(key) is not None:
                extra[out] = review[key]
    else:
        rating = _text(review)
    item = _first(node.get("itemReviewed"), index)
    claimant = image_url = None
    if isinstance(item, dict):
        claimant = _name(item.get("author"), index)
        if _text(item.get("datePublished")):
            extra["claim_date"] = _text(item.get("datePublished"))
        appearances = []
        for key in ("firstAppearance", "appearance"):
            for app in item.get(key) if isinstance(item.get(key), list) else [item.get(key)]:
                app = _deref(app, index)
                url = ((_text(app.get("url")) or _text(app.get("@id"))) if isinstance(app, dict)
                       else _text(app))
                if url and url not in appearances:
                    appearances.append(url)
                if isinstance(app, dict) and image_url is None:  # the image the claim came in
                    image_url = (_image_url(app, index) if "ImageObject" in _local_types(app)
                                 else _image_url(app.get("image"), index))
        if appearances:
            extra["appearances"] = appearances
    lang, unmapped = _language(node.get("inLanguage"))
    if unmapped:
        extra["inLanguage"] = unmapped
    if _text(node.get("@id")):
        extra["jsonld_id"] = _text(node.get("@id"))
    data = {
        "claim": claim,
        "title": _text(node.get("headline")) or _text(node.get("name")),
        "url": _text(node.get("url")),
        "publisher": _name(node.get("author"), index) or _name(node.get("publisher"), index),
        "rating": rating,
        "lang": lang,
        "published_at": _text(node.get("datePublished")),
        "claimant": claimant,
        # the claim's own image (an appearance's) before the review's illustration
        "image_url": image_url or _image_url(node.get("image"), index),
        "extra": extra or None,
    }
    return {k: v for k, v in data.items() if v is not None}


def _google_data(claim: dict[str, Any], review: Any) -> dict[str, Any]:
    """One review of one claim from the Fact Check Tools ``claims:search`` response."""
    text = _text(claim.get("text"))
    if text is None:
        raise BadRecord("claim without text")
    if not isinstance(review, dict):
        raise BadRecord(f"claimReview entry is {json_kind(review)}, not an object")
    publisher = review.get("publisher") if isinstance(review.get("publisher"), dict) else {}
    extra = {"claim_date": _text(claim.get("claimDate")),
             "publisher_site": _text(publisher.get("site"))}
    data = {
        "claim": text,
        "claimant": _text(claim.get("claimant")),
        "title": _text(review.get("title")),
        "url": _text(review.get("url")),
        "publisher": _text(publisher.get("name")) or _text(publisher.get("site")),
        "rating": _text(review.get("textualRating")),
        "lang": _text(review.get("languageCode")),
        "published_at": _text(review.get("reviewDate")),
        "extra": {k: v for k, v in extra.items() if v is not None} or None,
    }
    return {k: v for k, v in data.items() if v is not None}


def _google_records(node: dict[str, Any], name: str,
                    numbers: Iterator[int]) -> Iterator[RawRecord]:
    """A record per review per claim; ``numbers`` counts claims across the whole document."""
    for claim in node["claims"]:
        claim_no = next(numbers)
        ref = f"{name}:{claim_no}"
        if not isinstance(claim, dict):
            yield RawRecord(ref, None, f"claim {claim_no}: expected an object, "
                                       f"got {json_kind(claim)}")
            continue
        reviews = claim.get("claimReview")
        if not isinstance(reviews, list) or not reviews:
            yield RawRecord(ref, None, f"claim {claim_no}: no claimReview")
            continue
        for j, review in enumerate(reviews, 1):
            yield guarded(f"{name}:{claim_no}.{j}", f"claim {claim_no}, review {j}",
                          _google_data, claim, review)


def parse(doc: Any, name: str) -> Iterator[RawRecord]:
    """ClaimReview nodes (single, list, ``@graph``) and Google Fact Check Tools responses.

    Other schema.org nodes (WebPage, Organization …) are context, not records, and are skipped;
    a document with no ClaimReview at all is reported, so an empty import is never silent.
    """
    nodes = list(_nodes(doc))
    index = {n["@id"]: n for n in nodes if isinstance(n, dict) and isinstance(n.get("@id"), str)}
    found = False
    claim_numbers = itertools.count(1)
    for i, node in enumerate(nodes, 1):
        if _is_google(node):
            found = True
            yield from _google_records(node, name, claim_numbers)
        elif _is_claimreview(node):
            found = True
            yield guarded(f"{name}:{i}", f"item {i}", _claimreview_data, node, index)
    if not found:
        raise Unreadable("no ClaimReview node and no Fact Check Tools 'claims' list found")


def looks_like(doc: Any) -> bool:
    """Whether a parsed JSON document holds a ClaimReview node or a Fact Check Tools response."""
    return any(_is_claimreview(n) or _is_google(n) for n in _nodes(doc))
