"""What the desk folds away, and how an image post's own text is told from the text read from
its image; the thumbnail a worker stores for it."""
import io

import pytest
from PIL import Image

from api.desk.present import caption, shown_count
from plugin.image.thumb import THUMB_SIDE, thumbnail
from plugin.review.model import image_fields


def cands(*confidences):
    return [{"factcheck_id": f"fc{i}", "confidence": c} for i, c in enumerate(confidences)]


@pytest.mark.parametrize("confidences, ratio, shown", [
    ((0.95, 0.40, 0.10, 0.02), 0.2, 2),  # 0.10 < 0.2 × 0.95: folded, and all after it
    ((0.95, 0.40, 0.30), 0.2, 3),        # nothing far below
    ((0.95, 0.01, 0.50), 0.2, 1),        # ranks are in order: the first far-below one folds the rest
    ((0.30, 0.07, 0.065), 0.2, 3),       # both ≥ 0.06: shown
    ((0.95, 0.02), 0.0, 2),              # 0 folds nothing
    ((None, None), 0.2, 2),              # no confidence model: nothing says what is unlikely
    ((0.9, None, 0.01), 0.2, 2),         # an unscored one is not folded by itself
    ((0.9,), 0.2, 1),
    ((), 0.2, 0),
])
def test_shown_count(confidences, ratio, shown):
    assert shown_count(cands(*confidences), ratio) == shown


@pytest.mark.parametrize("item, expected", [
    ({"text": "look at this\nRUSSIAN FLAG AT THE CAPITOL", "image": {"ocr_text": "RUSSIAN FLAG AT THE CAPITOL"}},
     "look at this"),
    ({"text": "RUSSIAN FLAG AT THE CAPITOL", "image": {"ocr_text": "RUSSIAN FLAG AT THE CAPITOL"}}, ""),
    ({"text": "a caption only", "image": {"ocr_text": ""}}, "a caption only"),
    ({"text": "plain post", "image": None}, "plain post"),
])
def test_caption(item, expected):
    assert caption(item) == expected


def test_a_thumbnail_is_a_small_jpeg_of_the_decoded_pixels():
    big = Image.new("RGB", (1600, 900), (200, 30, 30))
    thumb = thumbnail(big)
    assert (thumb.width, thumb.height) == (THUMB_SIDE, 180)
    again = Image.open(io.BytesIO(thumb.data))
    assert again.format == "JPEG" and again.size == (THUMB_SIDE, 180) and not again.info.get("exif")
    small = thumbnail(Image.new("RGB", (100, 50)))
    assert (small.width, small.height) == (100, 50)  # never enlarged


def test_an_item_keeps_the_images_identity_and_text_and_the_thumbnail_apart():
    assert image_fields(None) == (None, None)
