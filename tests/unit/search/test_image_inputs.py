"""How a request gives a post's image (``plugin.image.inputs``) and what a match request makes
of it (``MatchRequest``: a text or an image)."""
import base64

import pytest

from plugin.errors import BadInput, ContentTooLarge
from plugin.image.inputs import check_one, decode_base64, given, image_body_bytes, read_image_file
from plugin.image.model import ImageAnalysis
from plugin.search.request import MatchRequest
from plugin.settings import Settings

PNG = b"\x89PNG\r\n\x1a\n\xfb\xff\xfe" + bytes(range(256))
IMAGE = ImageAnalysis(sha256="ab" * 32, width=1, height=1, format="PNG", pdq=None)


@pytest.mark.parametrize("value", [
    base64.b64encode(PNG).decode(),
    base64.urlsafe_b64encode(PNG).decode(),
    base64.urlsafe_b64encode(PNG).decode().rstrip("="),
    "data:image/png;base64," + base64.b64encode(PNG).decode(),
    "data:image/png;charset=binary;base64," + base64.b64encode(PNG).decode(),
    "\n".join(base64.encodebytes(PNG).decode().split()),
], ids=["standard", "urlsafe", "unpadded", "data-url", "data-url-params", "wrapped"])
def test_base64_images_in_every_usual_form(value):
    assert decode_base64(value, 10_000) == PNG


@pytest.mark.parametrize("value, error, words", [
    ("@@@@", BadInput, "not valid base64"),
    ("", BadInput, "empty"),
    (123, BadInput, "base64 string"),
    (base64.b64encode(b"x" * 2000).decode(), ContentTooLarge, "1,024 bytes"),
    ("A" * 10_000, ContentTooLarge, "FACTSIEVE_IMAGE_MAX_BYTES"),  # judged before decoding
])
def test_bad_base64_images(value, error, words):
    with pytest.raises(error, match=words):
        decode_base64(value, 1024)


def test_one_image_at_most():
    assert given({"image": "x"}) and given({"image_url": "https://e.org/a.png"}) and not given({"text": "x"})
    with pytest.raises(BadInput, match="not both"):
        check_one({"image": "x", "image_url": "https://e.org/a.png"})


def test_the_body_limit_fits_an_image_of_the_largest_size():
    s = Settings(image_max_bytes=3 * 1000, max_json_bytes=2048)
    assert image_body_bytes(s) >= 2048 + 4000


def test_an_image_file_is_read_up_to_the_limit(tmp_path):
    path = tmp_path / "a.png"
    path.write_bytes(PNG)
    assert read_image_file(path, 10_000) == PNG
    with pytest.raises(ContentTooLarge, match="larger than 10 bytes"):
        read_image_file(path, 10)
    with pytest.raises(BadInput, match="cannot read"):
        read_image_file(tmp_path / "missing.png", 10)


@pytest.mark.parametrize("data, image, ok", [
    ({"text": "x"}, None, True),
    ({}, IMAGE, True),                 # an image alone
    ({"text": "  "}, IMAGE, True),     # a blank caption with an image
    ({}, None, False),
    ({"text": " "}, None, False),
])
def test_a_post_is_a_text_or_an_image(data, image, ok):
    if ok:
        req = MatchRequest.from_mapping(data, image=image)
        assert req.image is image and isinstance(req.text, str)
    else:
        with pytest.raises(BadInput, match="text is empty"):
            MatchRequest.from_mapping(data, image=image)
