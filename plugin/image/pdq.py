"""PDQ perceptual hashes (Meta's PDQ, through ``pdqhash``): an image's own hash, the hashes a
query compares, and Hamming distances between hashes.

A hash is written as 64 lower-case hex digits in PDQ's canonical order (the one Meta's tools and
ThreatExchange's test data print: the first digit holds bits 255…252): ``pdqhash`` returns its
bits most significant first, and ``np.packbits`` keeps that order. Every hash of FactSieve is
written by :func:`to_hex`; distances only compare hex strings, so the order is the one place.

A query is hashed in PDQ's 8 dihedral orientations (a flipped or rotated copy hashes far from the
original, and ``compute_dihedral`` costs no more than one hash), and, when the image has uniform
bars at its top or bottom (a caption bar added over or under a picture), once more with the bars
stripped: an added bar moves the hash far from the original's.
"""
from __future__ import annotations

from typing import Any

from plugin.image.model import PdqHash

#: A row is a bar's when at least this share of it is the bar's colour …
BAR_ROW_SHARE = 0.6
#: … and may be a row of the bar's text when at least this share is: such rows are kept in a
#: bar when a bar's row follows them (the densest rows of a caption's text cover more than half
#: of a row; a picture's rows have little of one colour).
BAR_TEXT_SHARE = 0.2
#: Colour tolerance of a bar, per channel (0..255): JPEG artefacts and anti-aliasing stay in.
BAR_COLOUR_TOLERANCE = 28
#: A bar is at least this share of the image's height …
BAR_MIN_SHARE = 0.04
#: … and what is left once bars are stripped at least this share.
BAR_KEEP_SHARE = 0.4
#: Rows that are neither (a thin rule, a glyph reaching further) may interrupt a bar for at most
#: this share of the image's height.
BAR_GAP_SHARE = 0.01


def to_hex(bits: Any) -> str:
    """The hex of a 256-bit hash as ``pdqhash`` returns it (an array of 0/1, most significant
    bit first)."""
    import numpy as np

    return np.packbits(np.asarray(bits, dtype=np.uint8)).tobytes().hex()


def hamming(a_hex: str, b_hex: str) -> int:
    """The number of bits two hashes differ in."""
    return (int(a_hex, 16) ^ int(b_hex, 16)).bit_count()


def _pixels(img: Any) -> Any:
    import numpy as np

    return np.ascontiguousarray(np.asarray(img.convert("RGB"), dtype=np.uint8))


def hash_image(img: Any) -> PdqHash:
    """The image's own PDQ hash and quality (0..100)."""
    import pdqhash

    bits, quality = pdqhash.compute(_pixels(img))
    return PdqHash(hex=to_hex(bits), quality=int(quality))


def _dihedral(img: Any) -> tuple[list[str], int]:
    import pdqhash

    bits, quality = pdqhash.compute_dihedral(_pixels(img))
    return [to_hex(b) for b in bits], int(quality)


def hashes(img: Any, *, min_quality: int) -> tuple[PdqHash, tuple[str, ...]]:
    """The image's own hash, and the hashes a query compares (see :func:`query_hashes`), for
    the price of the dihedral hashes alone: their first is the image's own."""
    own, quality = _dihedral(img)
    pdq = PdqHash(hex=own[0], quality=quality)
    if quality < min_quality:
        return pdq, ()
    found = list(own)
    stripped = strip_bars(img)
    if stripped is not None:
        more, more_quality = _dihedral(stripped)
        if more_quality >= min_quality:
            found.extend(more)
    return pdq, tuple(dict.fromkeys(found))


def query_hashes(img: Any, *, min_quality: int) -> tuple[str, ...]:
    """The hashes a query compares: the image in its 8 orientations, and those of the image
    with its uniform top/bottom bars stripped when it has such bars (a stripped image of too
    low a quality adds none); ``()`` when the image's own quality is below ``min_quality``.
    No hash appears twice; the image's own comes first."""
    return hashes(img, min_quality=min_quality)[1]


def strip_bars(img: Any) -> Any | None:
    """``img`` without the uniform bands at its top and bottom, or ``None`` when it has none.

    A band is a run of rows from the edge in which most of each row
    (:data:`BAR_ROW_SHARE`) is one colour, the colour of the band's edge rows (so a solid
    caption bar with text in it is a band, while a gradient sky is not), or enough of it to be a
    row of text on the bar (:data:`BAR_TEXT_SHARE`); it ends at its last row of the bar's colour.
    Other rows may interrupt it briefly (:data:`BAR_GAP_SHARE`). Bands under
    :data:`BAR_MIN_SHARE` of the height are kept, and nothing is stripped when less than
    :data:`BAR_KEEP_SHARE` would be left."""
    import numpy as np

    rgb = np.asarray(img.convert("RGB"), dtype=np.int16)
    height = rgb.shape[0]
    if height < 20:
        return None
    step = max(1, rgb.shape[1] // 256)
    sample = rgb[:, ::step]
    top = _band(sample, height)
    bottom = _band(sample[::-1], height)
    if top + bottom == 0:
        return None
    if height - top - bottom < BAR_KEEP_SHARE * height:
        return None
    return img.crop((0, top, img.size[0], height - bottom))


def _band(rows: Any, height: int) -> int:
    """How many rows from the start of ``rows`` (rows × columns × RGB) form a bar, or 0."""
    import numpy as np

    edge = max(1, height // 100)
    colour = np.median(rows[:edge].reshape(-1, 3), axis=0)
    share = (np.abs(rows - colour).max(axis=2) <= BAR_COLOUR_TOLERANCE).mean(axis=1)
    if not (share[:edge] >= BAR_ROW_SHARE).all():
        return 0
    max_gap = max(1, int(BAR_GAP_SHARE * height))
    end, gap = 0, 0
    for i, row_share in enumerate(share[: int((1 - BAR_KEEP_SHARE) * height) + 1]):
        if row_share >= BAR_ROW_SHARE:
            end, gap = i + 1, 0
        elif row_share < BAR_TEXT_SHARE:
            gap += 1
            if gap > max_gap:
                break
    return end if end >= BAR_MIN_SHARE * height else 0
