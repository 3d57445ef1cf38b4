"""``plugin.image.pdq``: PDQ hashes survive re-encoding and resizing; a flip is found through the
query's 8 orientations, an added caption bar through bar stripping; distances count bits."""
from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image, ImageOps

from plugin.image.pdq import hamming, hash_image, hashes, query_hashes, strip_bars, to_hex
from tests.image_drawing import photo, with_caption

MAX_DISTANCE = 31  # Meta's default, FactSieve's pdq_max_distance


def jpeg(im: Image.Image, quality: int) -> Image.Image:
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=quality)
    return Image.open(io.BytesIO(buf.getvalue())).convert("RGB")


def nearest(target: str, candidates) -> int:
    return min(hamming(target, c) for c in candidates)


@pytest.mark.parametrize("a, b, bits", [
    ("0" * 64, "0" * 64, 0),
    ("0" * 64, "f" * 64, 256),
    ("8" + "0" * 63, "0" * 64, 1),
    ("0" * 63 + "3", "0" * 63 + "1", 1),
    ("f0" * 32, "0f" * 32, 256),
])
def test_hamming(a, b, bits):
    assert hamming(a, b) == bits == hamming(b, a)


def test_hex_is_most_significant_bit_first():
    bits = np.zeros(256, dtype=np.int64)
    bits[0] = bits[255] = 1
    assert to_hex(bits) == "8" + "0" * 62 + "1"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_jpeg_q30_and_half_size_stay_within_the_threshold(seed):
    original = photo(seed)
    edited = jpeg(original.resize((400, 300), Image.Resampling.BILINEAR), 30)
    own = hash_image(original)
    assert own.quality >= 50 and len(own.hex) == 64
    assert hamming(own.hex, hash_image(edited).hex) <= MAX_DISTANCE


def test_different_pictures_are_far_apart():
    a, b = hash_image(photo(0)).hex, hash_image(photo(1)).hex
    assert hamming(a, b) > 2 * MAX_DISTANCE


@pytest.mark.parametrize("edit", [ImageOps.mirror, ImageOps.flip, lambda im: im.rotate(90, expand=True)])
def test_a_flip_or_turn_is_found_through_the_query_hashes(edit):
    original = hash_image(photo(3)).hex
    edited = edit(photo(3))
    assert hamming(original, hash_image(edited).hex) > MAX_DISTANCE
    found = query_hashes(edited, min_quality=50)
    assert len(found) == 8
    assert nearest(original, found) <= MAX_DISTANCE


@pytest.mark.parametrize("seed, colour, ink, text", [
    (4, "white", "black", "When you see it: this photo is from 2015"),
    (5, "#1a1a1a", "white", "MMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMM"),  # dense text
    (6, "#ffd400", "black", "BREAKING"),
])
def test_a_caption_bar_is_stripped(seed, colour, ink, text):
    original = photo(seed)
    captioned = jpeg(with_caption(original, text, colour=colour, ink=ink), 80)
    own = hash_image(original).hex
    assert hamming(own, hash_image(captioned).hex) > MAX_DISTANCE
    stripped = strip_bars(captioned)
    assert stripped is not None and abs(stripped.size[1] - original.size[1]) <= 4
    assert nearest(own, query_hashes(captioned, min_quality=50)) <= MAX_DISTANCE


def test_bars_top_and_bottom():
    original = photo(7)
    framed = Image.new("RGB", (800, 900), "black")
    framed.paste(original, (0, 120))
    stripped = strip_bars(framed)
    assert stripped is not None and stripped.size == (800, 600)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_picture_without_bars_is_left_alone(seed):
    assert strip_bars(photo(seed)) is None


def test_a_thin_border_is_no_bar():
    framed = Image.new("RGB", (800, 610), "white")
    framed.paste(photo(8), (0, 10))
    assert strip_bars(framed) is None


def test_flat_images_have_no_query_hashes():
    flat = Image.new("RGB", (400, 300), (200, 30, 30))
    own, found = hashes(flat, min_quality=50)
    assert own.quality < 50 and found == ()
    assert query_hashes(flat, min_quality=50) == ()


def test_query_hashes_start_with_the_images_own_and_repeat_none():
    captioned = with_caption(photo(9), "A caption")
    own, found = hashes(captioned, min_quality=50)
    assert found[0] == own.hex == hash_image(captioned).hex
    assert len(found) == len(set(found)) == 16
