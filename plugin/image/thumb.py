"""A post image's thumbnail for the desk: a small JPEG re-encoded from the decoded pixels, so
what a reviewer's browser loads is bytes FactSieve wrote (no metadata, no original container,
no remote URL), at most :data:`THUMB_SIDE` pixels on its longest side."""
from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

#: the longest side of a desk thumbnail, in pixels (the item shows it at up to 240 CSS pixels)
THUMB_SIDE = 320
THUMB_QUALITY = 70


@dataclass(frozen=True)
class Thumbnail:
    data: bytes  # JPEG
    width: int
    height: int


def thumbnail(image: Any, side: int = THUMB_SIDE) -> Thumbnail:
    """``image`` (an RGB PIL image, as :func:`plugin.image.decode.decode` gives it) reduced to
    fit ``side`` × ``side``, as a baseline JPEG. Cost bounded by the decoded image's size, which
    decoding caps."""
    small = image.copy()
    small.thumbnail((side, side))
    out = io.BytesIO()
    small.convert("RGB").save(out, format="JPEG", quality=THUMB_QUALITY, optimize=True)
    return Thumbnail(out.getvalue(), small.width, small.height)
