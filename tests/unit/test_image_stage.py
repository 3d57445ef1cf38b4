"""``plugin.image.stage.analyse``: bytes in, the stored and shown analysis out."""
from __future__ import annotations

import pytest
from PIL import Image

from plugin.errors import ContentTooLarge, UnsupportedContentType
from plugin.image.model import PDQ_CHUNKS
from plugin.image.ocr import reader
from plugin.image.pdq import hamming
from plugin.image.stage import analyse
from tests.image_drawing import card, cer, dense_text, encode, meme, photo, with_caption

TEXT = ("Breaking: the moon landing footage was filmed in a studio, a leaked memo shows. "
        "Share before they delete it!")


@pytest.fixture(scope="module")
def ocr(settings):
    return reader(settings)


def test_a_meme(settings, ocr):
    data = encode(with_caption(meme("Garlic cures covid", seed=21), TEXT[:40]), "JPEG", quality=85)
    got = analyse(data, settings, lang="en", reader=ocr)
    assert (got.format, got.width, got.height) == ("JPEG", 800, 730)
    assert got.pdq is not None and got.pdq.quality >= settings.pdq_min_quality
    assert got.query_hashes[0] == got.pdq.hex and len(got.query_hashes) == 16
    assert "GARLIC CURES" in got.ocr.text and got.ocr.lang == "en"
    assert set(got.timings_ms) == {"decode_ms", "hash_ms", "ocr_ms"}

    stored = got.to_source()
    assert stored["pdq"] == got.pdq.hex and stored["ocr_text"] == got.ocr.text
    assert len([k for k in stored if k.startswith("pdq_c")]) == PDQ_CHUNKS
    shown = got.to_dict()
    assert shown["ocr"]["pass"] == got.ocr.pass_name and shown["format"] == "JPEG"


def test_text_heavy_follows_the_share_setting(settings, ocr):
    dense = encode(card(TEXT + " " + TEXT, pt=40, width=30, size=(800, 800)))
    got = analyse(dense, settings, lang="en", reader=ocr, query=False)
    assert cer(got.ocr.text, TEXT + " " + TEXT) < 0.05
    share = got.ocr.text_share
    assert 0.1 < share < 0.6
    assert got.text_heavy == (share >= settings.image_text_heavy_share)
    for cut, heavy in ((share - 0.01, True), (share + 0.01, False)):
        tuned = settings.model_copy(update={"image_text_heavy_share": cut})
        assert analyse(dense, tuned, lang="en", reader=ocr, query=False).text_heavy is heavy

    plain = analyse(encode(photo(22)), settings, lang="en", reader=ocr)
    assert not plain.text_heavy and plain.ocr.text_share < 0.05


def test_the_language_is_detected_when_not_given(settings, ocr):
    got = analyse(encode(card(TEXT)), settings, reader=ocr)
    assert got.ocr.lang == "en" and got.ocr.model in ("Latin", "eng")


def test_a_re_encoded_copy_hashes_close(settings):
    original = photo(23)
    a = analyse(encode(original), settings, ocr=False)
    b = analyse(encode(original.resize((400, 300)), "JPEG", quality=30), settings, ocr=False)
    assert a.sha256 != b.sha256
    assert min(hamming(a.pdq.hex, h) for h in b.query_hashes) <= settings.pdq_max_distance


def test_a_flat_image_has_no_hash(settings):
    got = analyse(encode(Image.new("RGB", (400, 300), "red")), settings, ocr=False)
    assert got.pdq is None and got.query_hashes == () and got.ocr is None and not got.text_heavy
    assert "pdq" not in got.to_source() and got.to_dict()["pdq"] is None


def test_no_query_hashes_unless_asked(settings):
    got = analyse(encode(photo(24)), settings, query=False, ocr=False)
    assert got.pdq is not None and got.query_hashes == ()
    assert set(got.timings_ms) == {"decode_ms", "hash_ms"}


def test_the_limits_come_from_the_settings(settings):
    small = settings.model_copy(update={"image_max_pixels": 10_000})
    with pytest.raises(ContentTooLarge, match="FACTSIEVE_IMAGE_MAX_PIXELS"):
        analyse(encode(photo(25, (200, 100))), small, ocr=False)
    with pytest.raises(UnsupportedContentType, match="got SVG"):
        analyse(b"<svg/>", settings)


def test_a_language_without_a_pack_is_routed_by_script_not_refused(settings, ocr):
    png = encode(card("Vaccines do not change your DNA"), "PNG")
    got = analyse(png, settings, lang="nl", reader=ocr, query=False)
    assert "DNA" in got.ocr.text and got.ocr.model in ("Latin", "eng")


def test_the_ocr_budget_comes_from_the_settings_unless_given(settings, ocr):
    data = encode(dense_text())
    tight = settings.model_copy(update={"ocr_budget_s": 1.0})
    got = analyse(data, tight, lang="en", reader=ocr, query=False)
    assert got.ocr.budget_spent and got.ocr.text == "" and not got.text_heavy
    assert got.pdq is not None  # the hash is made whatever the reading's budget
    plain = analyse(encode(card(TEXT)), settings, lang="en", reader=ocr, query=False, ocr_budget_s=30.0)
    assert not plain.ocr.budget_spent and cer(plain.ocr.text, TEXT) < 0.05
