from plugin.lab.images.posts import image_queries, reading_key, summarise_readings

QUERIES = [{"id": "1", "text": "a", "lang": "en", "date": "2020-01-01"},
           {"id": "2", "text": "b", "lang": "es", "date": None},
           {"id": "3", "text": "c", "lang": "ko"}]
READINGS = {
    "1": {"text": "read a", "lang": "en", "pass": "image", "cer": 0.1, "analyse_ms": 400.0},
    "2": {"text": "  ", "lang": "es", "pass": "white", "cer": 1.0, "analyse_ms": 600.0},
    "3": {"skipped": "Arabic text needs raqm"},
}


def test_image_posts_carry_the_ocr_text_and_the_language_only_when_known():
    assert image_queries(QUERIES, READINGS, unknown_lang=False) == [
        {"id": "1", "text": "read a", "date": "2020-01-01", "lang": "en"}]
    assert image_queries(QUERIES, READINGS, unknown_lang=True)[0]["lang"] is None


def test_readings_summary():
    s = summarise_readings(READINGS)
    assert (s["images"], s["skipped"], s["empty"]) == (2, 1, 1)
    assert s["cer"]["mean"] == 0.55
    assert s["pass"] == {"image": 1, "white": 1}
    assert s["analyse_ms"] == {"p50": 400.0, "p95": 600.0}  # nearest rank


def test_a_cached_reading_is_redone_when_the_text_or_template_changes():
    assert reading_key("a", "light") == reading_key("a", "light")
    assert len({reading_key("a", "light"), reading_key("b", "light"), reading_key("a", "dark")}) == 3


def test_cer_per_post_language():
    s = summarise_readings(READINGS, {"1": "en", "2": "es", "3": "ko"})
    assert s["cer_per_lang"] == {"en": 0.1, "es": 1.0}
    assert summarise_readings(READINGS)["cer_per_lang"] == {}


def test_the_caption_carries_the_first_half_of_the_words_and_the_image_the_rest():
    from plugin.lab.images.posts import shown_text, split_caption

    assert split_caption("one two three four") == ("one two", "three four")
    assert split_caption("one two three") == ("one", "two three")  # the image gets the odd word
    assert split_caption("  a b\nc  d  ") == ("a b", "c  d")  # cut before a word, as written
    assert split_caption("alone") == ("", "alone")
    assert split_caption("   ") == ("", "")
    # an embedded tweet's signature is not the post's words: it stays with the image (the card)
    assert split_caption("Masks do not work at all — Jo Doe (@jodoe) May 1, 2020") == (
        "Masks do not", "work at all — Jo Doe (@jodoe) May 1, 2020")
    assert shown_text("one two three four", "half") == "three four"
    assert shown_text("one two three four", "none") == "one two three four"


IMAGE = {"sha256": "ab" * 32, "width": 600, "height": 300, "format": "PNG", "pdq": "f" * 64,
         "pdq_quality": 90, "query_hashes": ["f" * 64], "text_heavy": True, "text_share": 0.4}


def test_a_cached_reading_rebuilds_the_image_the_matcher_takes():
    from plugin.lab.images.posts import analysis_of

    a = analysis_of({"text": "three four", "lang": "en", "model": "eng", "confidence": 91.0,
                     "pass": "image", "ocr_ms": 250.0, "image": IMAGE})
    assert (a.sha256, a.pdq.hex, a.pdq.quality, a.query_hashes, a.text_heavy) == (
        "ab" * 32, "f" * 64, 90, ("f" * 64,), True)
    assert (a.ocr.text, a.ocr.lang, a.ocr.pass_name, a.ocr.text_share, a.ocr.seconds) == (
        "three four", "en", "image", 0.4, 0.25)
    blank = analysis_of({"text": "", "lang": None, "model": None, "confidence": None, "pass": None,
                         "ocr_ms": None, "image": {**IMAGE, "pdq": None, "query_hashes": []}})
    assert blank.ocr is None and blank.pdq is None
    assert analysis_of({"skipped": "too long"}) is None


def test_captioned_posts_carry_the_caption_and_the_image_read():
    from plugin.lab.images.posts import captioned_posts

    queries = [{"id": "1", "text": "one two three four", "lang": "en", "date": None},
               {"id": "2", "text": "alone", "lang": "es"},
               {"id": "3", "text": "not rendered here", "lang": "en"}]
    readings = {"1": {"text": "three four", "lang": "en", "model": "eng", "confidence": 90.0,
                      "pass": "image", "ocr_ms": 1.0, "image": IMAGE},
                "2": {"text": " ", "lang": "es", "model": "spa", "confidence": 10.0, "pass": "image",
                      "ocr_ms": 1.0, "image": IMAGE},
                "3": {"skipped": "no font"}}
    posts = captioned_posts(queries, readings, unknown_lang=False, with_image=True)
    # post 2: no caption and nothing read, left out; post 3: its caption alone
    assert [(p["id"], p["text"], p["lang"]) for p in posts] == [("1", "one two", "en"), ("3", "not", "en")]
    assert posts[0]["image"].ocr.text == "three four" and posts[1]["image"] is None
    alone = captioned_posts(queries, readings, unknown_lang=True, with_image=False)
    assert [(p["id"], p["text"], p["lang"], p["image"]) for p in alone] == [
        ("1", "one two", None, None), ("3", "not", None, None)]
