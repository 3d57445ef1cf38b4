"""Image bytes → a checked RGB image: the one place image bytes are trusted.

The format is sniffed from the magic bytes before PIL sees anything, so an SVG, an HTML page or
a PDF is refused by name (415) and only the five raster formats reach a decoder. The image's
dimensions are read from its header and checked against ``max_pixels`` before a pixel is
decoded (a decompression bomb is a 413 that allocates nothing). What comes out is a new image
built from the pixels only: EXIF orientation applied, alpha composited on white, and nothing of
the metadata (EXIF, GPS, ICC, XMP, comments) kept. Large images are decoded at reduced scale
(JPEG's ``draft``) and reduced so that their longest side is at most :data:`MAX_SIDE`: neither
OCR nor PDQ reads more (PDQ itself works on 64×64).
"""
from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from typing import Any

from plugin.errors import BadInput, ContentTooLarge, UnsupportedContentType

#: The longest side, in pixels, of the image the stage reads.
MAX_SIDE = 2000

#: What the API accepts, as PIL names the formats (also the names the messages use).
FORMATS = ("JPEG", "PNG", "WEBP", "GIF", "BMP")
_SHOWN = {"JPEG": "JPEG", "PNG": "PNG", "WEBP": "WebP", "GIF": "GIF", "BMP": "BMP"}
_ACCEPTED = "JPEG, PNG, WebP, GIF or BMP"
_ORIENTATION = 0x0112  # EXIF's Orientation tag


@dataclass(frozen=True)
class Decoded:
    #: an RGB PIL image, metadata-free, longest side at most ``MAX_SIDE``
    image: Any
    #: of the bytes as sent
    sha256: str
    #: PIL's format name (one of :data:`FORMATS`)
    format: str
    #: the image's own size as displayed (after its EXIF orientation), before any reduction
    width: int
    height: int


def sniff(data: bytes) -> str:
    """The format of ``data`` from its first bytes: one of :data:`FORMATS`, or raises
    ``UnsupportedContentType`` naming what it is instead (SVG, HTML, PDF, …) or ``BadInput``
    when it is nothing recognisable."""
    head = data[:16]
    if head.startswith(b"\xff\xd8\xff"):
        return "JPEG"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "PNG"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "GIF"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WEBP"
    if head[:2] == b"BM" and len(data) >= 26:
        return "BMP"
    other = _other_type(data)
    if other:
        raise UnsupportedContentType(f"image must be {_ACCEPTED}; got {other}")
    raise BadInput(f"image is not a readable image: its first bytes are none of {_ACCEPTED}")


def _other_type(data: bytes) -> str | None:
    """The name of a known non-raster (or unsupported raster) type ``data`` starts as."""
    head = data[:32]
    if head.startswith(b"%PDF"):
        return "PDF"
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return "TIFF"
    if head[4:8] == b"ftyp":
        brand = head[8:12]
        return "AVIF" if brand in (b"avif", b"avis") else "HEIC" if brand[:3] in (b"hei", b"mif") \
            else "an ISO media file"
    if head.startswith((b"\x00\x00\x01\x00", b"\x00\x00\x02\x00")) and len(data) > 22:
        return "ICO"
    text = data[:2048].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if text.startswith(b"<"):
        if b"<svg" in text:
            return "SVG"
        if text.startswith((b"<!doctype html", b"<html")) or b"<html" in text or b"<body" in text:
            return "HTML"
        return "XML" if text.startswith(b"<?xml") else "markup"
    sample = data[:2048]
    if sample and b"\x00" not in sample:
        try:
            sample.decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.start < len(sample) - 3:  # not just a character cut at the sample's end
                return None
        return "text"
    return None


def _open(data: bytes, fmt: str) -> Any:
    """The image opened by its format's own PIL class (its header read, no pixel decoded).

    ``Image.open`` would run PIL's decompression-bomb check against the process-wide
    ``MAX_IMAGE_PIXELS``; the caller checks the size against its own limit instead (the same
    guard, per call, with nothing global to set)."""
    from PIL import BmpImagePlugin, GifImagePlugin, JpegImagePlugin, PngImagePlugin, WebPImagePlugin

    cls = {"JPEG": JpegImagePlugin.JpegImageFile, "PNG": PngImagePlugin.PngImageFile,
           "GIF": GifImagePlugin.GifImageFile, "WEBP": WebPImagePlugin.WebPImageFile,
           "BMP": BmpImagePlugin.BmpImageFile}[fmt]
    return cls(io.BytesIO(data))


def check(data: bytes, *, max_bytes: int, max_pixels: int) -> tuple[str, int, int]:
    """The cheap checks, with no pixel decoded: the size in bytes, the format sniffed, the
    header read and its dimensions within ``max_pixels``. ``(format, width, height)`` as the
    header says (before any EXIF orientation), or what :func:`decode` raises for them. The API
    runs these before it accepts a post for a worker to read (``inputs.check_input``)."""
    im, fmt = _header(data, max_bytes=max_bytes, max_pixels=max_pixels)
    try:
        return fmt, *im.size
    finally:
        im.close()


def _header(data: bytes, *, max_bytes: int, max_pixels: int) -> tuple[Any, str]:
    """The opened image (header read, size checked) and its format: see :func:`check`."""
    from PIL import Image

    if not data:
        raise BadInput("image is empty")
    if len(data) > max_bytes:
        raise ContentTooLarge(f"image is {len(data):,} bytes; the limit is {max_bytes:,} bytes "
                              "(FACTSIEVE_IMAGE_MAX_BYTES)")
    fmt = sniff(data)
    shown = _SHOWN[fmt]
    try:
        im = _open(data, fmt)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ContentTooLarge(f"image is too large to decode ({exc}); the limit is "
                              f"{max_pixels:,} pixels (FACTSIEVE_IMAGE_MAX_PIXELS)") from None
    except Exception as exc:  # PIL raises SyntaxError, OSError, ValueError, struct.error…
        raise BadInput(f"image is not a readable {shown}: {_reason(exc)}") from None
    w, h = im.size
    if w < 1 or h < 1:
        im.close()
        raise BadInput(f"image is not a readable {shown}: it says it is {w}×{h} pixels")
    if w * h > max_pixels:
        im.close()
        raise ContentTooLarge(f"image is {w}×{h} ({w * h:,} pixels); the limit is "
                              f"{max_pixels:,} pixels (FACTSIEVE_IMAGE_MAX_PIXELS)")
    return im, fmt


def decode(data: bytes, *, max_bytes: int, max_pixels: int) -> Decoded:
    """Check and decode image bytes (see the module's docstring).

    Raises ``BadInput`` (empty, broken, truncated), ``UnsupportedContentType`` (not one of
    the five raster formats) or ``ContentTooLarge`` (over ``max_bytes``, or over
    ``max_pixels`` by its header)."""
    from PIL import Image

    im, fmt = _header(data, max_bytes=max_bytes, max_pixels=max_pixels)
    shown = _SHOWN[fmt]
    w, h = im.size
    try:
        if fmt == "JPEG":
            im.draft("RGB", (MAX_SIDE, MAX_SIDE))
        im.load()
        oriented, swapped = _oriented(im)
        rgb = _rgb(oriented)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ContentTooLarge(f"image is too large to decode ({exc}); the limit is "
                              f"{max_pixels:,} pixels (FACTSIEVE_IMAGE_MAX_PIXELS)") from None
    except Exception as exc:
        raise BadInput(f"image is not a readable {shown}: {_reason(exc)}") from None
    finally:
        im.close()
    # the displayed size: an EXIF orientation of 5..8 (a quarter turn) swaps the header's sides
    width, height = (h, w) if swapped else (w, h)
    if max(rgb.size) > MAX_SIDE:
        rgb.thumbnail((MAX_SIDE, MAX_SIDE), Image.Resampling.LANCZOS)
    return Decoded(image=rgb, sha256=hashlib.sha256(data).hexdigest(), format=fmt,
                   width=width, height=height)


def _oriented(im: Any) -> tuple[Any, bool]:
    """``im`` turned as its EXIF orientation says, and whether that swapped its sides. Broken
    EXIF leaves the image as it is (the pixels are fine; only the metadata is not)."""
    from PIL import ImageOps

    try:
        swapped = im.getexif().get(_ORIENTATION) in (5, 6, 7, 8)
        return ImageOps.exif_transpose(im), swapped
    except Exception:  # PIL raises what its EXIF parser meets: struct.error, ValueError, …
        return im, False


def _rgb(im: Any) -> Any:
    """A new RGB image from ``im``'s pixels alone (no ``info``, no EXIF), transparency
    composited on white, 16-bit and float modes scaled to 8 bits."""
    import numpy as np
    from PIL import Image

    if im.mode in ("I", "I;16", "I;16B", "I;16L", "F"):
        arr = np.asarray(im.convert("I") if im.mode != "F" else im, dtype=np.float64)
        top = 65535.0 if arr.max(initial=0) > 255 else 255.0
        im = Image.fromarray((np.clip(arr, 0, top) * (255.0 / top)).astype(np.uint8), "L")
    if im.mode == "P" and "transparency" in im.info or im.mode in ("PA", "LA", "La", "RGBa"):
        im = im.convert("RGBA")
    if im.mode == "RGBA":
        white = Image.new("RGBA", im.size, (255, 255, 255, 255))
        im = Image.alpha_composite(white, im)
    pixels = np.asarray(im.convert("RGB"), dtype=np.uint8)
    return Image.fromarray(np.ascontiguousarray(pixels), "RGB")


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text[:200]
