"""``plugin.image.decode``: the one place image bytes are trusted. Every refusal names its
problem (empty, broken, not a raster image, too large), and what comes out is oriented, RGB,
metadata-free and at most ``MAX_SIDE`` pixels on its longest side."""
from __future__ import annotations

import hashlib
import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from plugin.errors import BadInput, ContentTooLarge, UnsupportedContentType
from plugin.image.decode import MAX_SIDE, decode, sniff
from tests.image_drawing import encode, photo

LIMITS = {"max_bytes": 8 * 1024 * 1024, "max_pixels": 40_000_000}


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png_claiming(width: int, height: int) -> bytes:
    """A PNG whose header says ``width``×``height`` and whose pixel data is a few bytes."""
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + _png_chunk(b"IDAT", zlib.compress(b"\0" * 64)) + _png_chunk(b"IEND", b""))


@pytest.mark.parametrize("data, error, message", [
    (b"", BadInput, "image is empty"),
    (np.random.default_rng(7).integers(0, 256, 4096, dtype=np.uint8).tobytes(), BadInput,
     "image is not a readable image"),
    (b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"><rect/></svg>',
     UnsupportedContentType, "image must be JPEG, PNG, WebP, GIF or BMP; got SVG"),
    (b"  <svg viewBox='0 0 10 10'></svg>", UnsupportedContentType, "got SVG"),
    (b"<!DOCTYPE html><html><body>not an image</body></html>", UnsupportedContentType, "got HTML"),
    (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj", UnsupportedContentType, "got PDF"),
    (b"II*\x00\x08\x00\x00\x00", UnsupportedContentType, "got TIFF"),
    ("just some text, über plain".encode(), UnsupportedContentType, "got text"),
])
def test_refusals_name_the_problem(data, error, message):
    with pytest.raises(error) as info:
        decode(data, **LIMITS)
    assert type(info.value) is error
    assert message in str(info.value)


def test_a_truncated_png_is_not_readable():
    data = encode(photo(1, (300, 200)), "PNG")
    with pytest.raises(BadInput, match="image is not a readable PNG") as info:
        decode(data[: len(data) // 2], **LIMITS)
    assert type(info.value) is BadInput


def test_a_header_claiming_huge_dimensions_is_refused_before_decoding():
    # 50000×50000 RGB would take 7.5 GB; the header alone is read
    with pytest.raises(ContentTooLarge, match=r"50000×50000 \(2,500,000,000 pixels\); the limit is "
                                              r"40,000,000 pixels \(FACTSIEVE_IMAGE_MAX_PIXELS\)"):
        decode(png_claiming(50_000, 50_000), **LIMITS)


def test_the_pixel_limit_is_the_settings_not_pils():
    # between the limit and twice it, PIL itself would only warn
    data = encode(photo(2, (150, 100)), "PNG")
    with pytest.raises(ContentTooLarge, match="150×100"):
        decode(data, max_bytes=LIMITS["max_bytes"], max_pixels=10_000)
    assert decode(data, max_bytes=LIMITS["max_bytes"], max_pixels=15_000).image.size == (150, 100)


def test_too_many_bytes():
    data = encode(photo(3, (300, 200)), "PNG")
    with pytest.raises(ContentTooLarge, match=f"image is {len(data):,} bytes; the limit is 2,000 bytes"):
        decode(data, max_bytes=2000, max_pixels=LIMITS["max_pixels"])


@pytest.mark.parametrize("fmt, kw", [("PNG", {}), ("JPEG", {"quality": 90}), ("WEBP", {"quality": 90}),
                                     ("GIF", {}), ("BMP", {})])
def test_every_accepted_format(fmt, kw):
    data = encode(photo(4, (320, 240)), fmt, **kw)
    got = decode(data, **LIMITS)
    assert (got.format, got.width, got.height, got.image.size, got.image.mode) == \
        (fmt, 320, 240, (320, 240), "RGB")
    assert got.sha256 == hashlib.sha256(data).hexdigest()
    assert sniff(data) == fmt


def test_exif_is_dropped_and_its_orientation_applied():
    im = Image.new("RGB", (400, 300), "white")
    im.paste((255, 0, 0), (0, 0, 100, 60))  # a red block at the top left
    exif = Image.Exif()
    exif[0x0112] = 6  # shown turned a quarter clockwise
    exif[0x010F] = "PhoneMaker"
    exif[0x8825] = {1: "N", 2: (48.0, 51.0, 24.0), 3: "E", 4: (2.0, 21.0, 3.0)}  # GPS
    data = encode(im, "JPEG", quality=95, exif=exif)
    assert b"PhoneMaker" in data

    got = decode(data, **LIMITS)
    assert (got.width, got.height, got.image.size) == (300, 400, (300, 400))
    red = np.asarray(got.image)[10, 300 - 10]  # the top left went to the top right
    assert red[0] > 200 and red[1] < 60 and red[2] < 60
    assert got.image.info == {} and len(got.image.getexif()) == 0
    saved = encode(got.image, "JPEG")
    assert b"Exif" not in saved and b"PhoneMaker" not in saved


def test_transparency_is_composited_on_white():
    im = Image.new("RGBA", (64, 64), (0, 0, 0, 0))
    im.paste((0, 0, 255, 255), (0, 0, 32, 64))
    pixels = np.asarray(decode(encode(im, "PNG"), **LIMITS).image)
    assert pixels[5, 50].tolist() == [255, 255, 255] and pixels[5, 5].tolist() == [0, 0, 255]


def test_a_large_jpeg_is_decoded_reduced():
    big = photo(5, (400, 300)).resize((4000, 3000), Image.Resampling.BILINEAR)
    got = decode(encode(big, "JPEG", quality=80), **LIMITS)
    assert (got.width, got.height) == (4000, 3000)
    assert got.image.size == (MAX_SIDE, MAX_SIDE * 3 // 4)


def test_a_large_png_is_reduced():
    got = decode(encode(Image.new("RGB", (2500, 500), "gray"), "PNG"), **LIMITS)
    assert (got.width, got.height, got.image.size) == (2500, 500, (MAX_SIDE, 400))


def test_a_gif_reads_its_first_frame():
    frames = [Image.new("RGB", (40, 30), c) for c in ("red", "blue")]
    buf = io.BytesIO()
    frames[0].save(buf, "GIF", save_all=True, append_images=frames[1:])
    pixels = np.asarray(decode(buf.getvalue(), **LIMITS).image)
    assert pixels[0, 0].tolist() == [255, 0, 0]


@pytest.mark.filterwarnings("ignore::UserWarning:PIL.TiffImagePlugin")  # PIL warns, as it should
def test_broken_exif_leaves_the_pixels_readable():
    data = encode(photo(6, (120, 90)), "JPEG")
    junk = b"Exif\x00\x00MM\x00\x2a\x00\x00\x00\x08\x00\x09\x01\x12\x00\x03" + b"\xff" * 20
    app1 = b"\xff\xe1" + struct.pack(">H", len(junk) + 2) + junk
    got = decode(data[:2] + app1 + data[2:], **LIMITS)
    assert got.image.size == (120, 90) and got.image.info == {}
