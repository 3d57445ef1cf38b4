"""The same-image query (pure): which stored fact-checks hold an image within ``max_distance``
bits of a post's PDQ hashes, or with the same sha256, and how far each is.

Two steps in one search body, both in OpenSearch:

1. **Candidates** by terms. A stored hash is 16 chunks of 16 bits (``image.pdq_c0`` …
   ``image.pdq_c15``). Two 256-bit hashes within ``d`` bits of each other differ in at most
   ``d`` bits spread over 16 chunks, so when ``d < 2 × 16`` (pigeonhole) at least one chunk
   differs in at most one bit. Asking, per chunk position, for the query's chunk and its 16
   one-bit neighbours therefore finds every pair within 31 bits (Meta's default threshold);
   above 31 bits a pair may be missed.
2. **Exact distance** by a painless ``script_score`` over the four signed longs
   (``image.pdq_w0`` … ``image.pdq_w3``): ``Long.bitCount`` of the XOR with each query hash,
   the minimum over the query's hashes (its orientations and bar-stripped variants). The score
   is ``256 − distance``, or ``EXACT_SCORE`` when the stored sha256 equals the post's (the same
   file: distance 0 whatever the hashes say, and found even when its hash was too flat to
   store); ``min_score`` drops everything further than ``max_distance``.

``read_image_hits`` turns the answer back into ``ImageHit``s. Documents without an ``image``
never match: they have no chunk terms, no sha256 and no words.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from plugin.image.model import PDQ_BITS, PDQ_CHUNKS, pdq_fields

#: the score of a PDQ match at distance 0; a match at distance d scores ``PDQ_BITS - d``
FULL_SCORE = float(PDQ_BITS)
#: the score of a stored image whose sha256 is the post's: above any PDQ score, so it is told
#: apart (``ImageHit.exact``)
EXACT_SCORE = FULL_SCORE + 1
#: what a hit's ``_source`` holds: enough to explain the match and to check a text-heavy
#: image's OCR text against the post's
SOURCE = ["id", "image.text_heavy", "image.ocr_text"]

_HEX64 = re.compile(r"[0-9a-f]{64}")
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")

#: Painless: the exact-file test first, then the minimum Hamming distance to any query hash
#: (``params.words``: four signed longs per hash, in the stored words' order).
SCRIPT = """
if (params.sha256 != null && doc['image.sha256'].size() > 0
    && doc['image.sha256'].value == params.sha256) {
  return params.exact;
}
if (doc['image.pdq_w0'].size() == 0) {
  return 0;
}
long w0 = doc['image.pdq_w0'].value;
long w1 = doc['image.pdq_w1'].value;
long w2 = doc['image.pdq_w2'].value;
long w3 = doc['image.pdq_w3'].value;
List q = params.words;
int best = params.bits;
for (int i = 0; i + 3 < q.size(); i += 4) {
  int d = Long.bitCount(w0 ^ ((Number) q.get(i)).longValue())
        + Long.bitCount(w1 ^ ((Number) q.get(i + 1)).longValue())
        + Long.bitCount(w2 ^ ((Number) q.get(i + 2)).longValue())
        + Long.bitCount(w3 ^ ((Number) q.get(i + 3)).longValue());
  if (d < best) {
    best = d;
  }
}
return params.bits - best;
""".strip()


@dataclass(frozen=True)
class ImageHit:
    """A stored fact-check whose image is the post's: its id, the Hamming distance of the
    closest pair of hashes (0 for the same file), whether the file is the same (sha256), and
    what the fact-check's image says about its text."""

    id: str
    distance: int
    exact: bool
    text_heavy: bool
    ocr_text: str | None


def neighbour_terms(chunk: str) -> list[str]:
    """A 16-bit chunk (four hex digits) and its 16 one-bit neighbours, the chunk first."""
    if not _HEX4.fullmatch(chunk):
        raise ValueError(f"a PDQ chunk is four hex digits, got {chunk!r}")
    value = int(chunk, 16)
    return [f"{value:04x}"] + [f"{value ^ (1 << bit):04x}" for bit in range(16)]


def chunk_terms(hashes: Iterable[str]) -> list[list[str]]:
    """Per chunk position, the sorted union of every hash's chunk and its neighbours."""
    terms: list[set[str]] = [set() for _ in range(PDQ_CHUNKS)]
    for h in hashes:
        for i in range(PDQ_CHUNKS):
            terms[i].update(neighbour_terms(h[4 * i:4 * i + 4]))
    return [sorted(t) for t in terms]


def _checked(hashes: Iterable[str]) -> list[str]:
    out = []
    for h in hashes:
        h = h.strip().lower()
        if not _HEX64.fullmatch(h):
            raise ValueError(f"a PDQ hash is 64 hex digits, got {h[:80]!r}")
        if h not in out:
            out.append(h)
    return out


def same_image_query(hashes: Sequence[str], *, max_distance: int, size: int = 10,
                     sha256: str | None = None, filters: Iterable[dict[str, Any]] = ()) -> dict[str, Any]:
    """The search body for stored images within ``max_distance`` bits of any of ``hashes``
    (64 hex digits each), or whose sha256 is ``sha256``; ``filters`` are further clauses every
    hit must pass (language, date …). ``max_distance`` up to 31 finds every such image (see
    the module's docstring); at least one hash or the sha256 must be given."""
    hashes = _checked(hashes)
    if not hashes and not sha256:
        raise ValueError("a same-image query needs a PDQ hash or a sha256")
    if not 0 <= max_distance <= PDQ_BITS:
        raise ValueError(f"max_distance must be 0..{PDQ_BITS}, got {max_distance}")
    should: list[dict[str, Any]] = [{"terms": {f"image.pdq_c{i}": terms}}
                                    for i, terms in enumerate(chunk_terms(hashes))]
    if sha256:
        should.append({"term": {"image.sha256": sha256}})
    words = [w for h in hashes for w in (pdq_fields(h)[f"pdq_w{i}"] for i in range(4))]
    candidates = {"bool": {"filter": [*filters,
                                      {"bool": {"should": should, "minimum_should_match": 1}}]}}
    return {
        "size": size,
        "track_total_hits": False,
        "_source": list(SOURCE),
        "min_score": FULL_SCORE - max_distance,
        "query": {"script_score": {"query": candidates, "script": {
            "lang": "painless", "source": SCRIPT,
            "params": {"words": words, "sha256": sha256 or None, "bits": PDQ_BITS,
                       "exact": EXACT_SCORE}}}},
    }


def read_image_hits(resp: dict[str, Any]) -> list[ImageHit]:
    """The hits of a ``same_image_query`` answer, closest first (the same file before a hash at
    distance 0, then by id)."""
    out = []
    for hit in resp.get("hits", {}).get("hits", []):
        score = float(hit.get("_score") or 0.0)
        exact = score > FULL_SCORE + 0.5
        distance = 0 if exact else max(0, round(FULL_SCORE - score))
        src = hit.get("_source") or {}
        image = src.get("image") or {}
        out.append(ImageHit(id=str(src.get("id") or hit["_id"]), distance=distance, exact=exact,
                            text_heavy=bool(image.get("text_heavy")),
                            ocr_text=image.get("ocr_text") or None))
    return sorted(out, key=lambda h: (h.distance, not h.exact, h.id))
