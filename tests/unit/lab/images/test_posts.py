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
