import io

import numpy as np
import pytest
from PIL import Image

from plugin.errors import BadInput
from plugin.lab.images.render import (TEMPLATES, WIDTH, drawable, font, photo, raqm_available, render,
                                      script_of, split_post, wrap)

TWEET = ("Protestors in Hong Kong have got wearable projectors to avoid facial recognition 😮 "
         "pic.twitter.com/fvjLn9hjdn — 𝙇𝙀𝙀 𝙈𝙄𝙁𝙎𝙐𝘿 (@LeeMifsud) October 5, 2019")


def test_drawable_text_drops_pictographs_and_picture_links_and_folds_styled_letters():
    assert drawable("Hot 🔥🔥 take ❤️ pic.twitter.com/abc123\n\n  next   line ") == "Hot take\nnext line"
    assert drawable("𝙇𝙀𝙀") == "LEE"


def test_a_tweet_signature_becomes_the_cards_author_and_date():
    post = split_post(TWEET)
    assert post.body == "Protestors in Hong Kong have got wearable projectors to avoid facial recognition"
    assert (post.name, post.handle, post.date) == ("LEE MIFSUD", "LeeMifsud", "October 5, 2019")
    plain = split_post("no signature here", seed="7")
    assert plain.body == "no signature here" and plain.date is None
    assert plain == split_post("no signature here", seed="7")  # the made-up author is seeded


@pytest.mark.parametrize("text, script", [("hello", "latin"), ("코로나 백신 접종", "hangul"),
                                          ("नमस्ते दुनिया", "devanagari"), ("مرحبا بالعالم", "arabic"),
                                          ("1234 !!", "latin")])
def test_the_script_is_the_one_most_letters_are_in(text, script):
    assert script_of(text) == script


def test_wrapped_lines_fit_the_width_and_keep_every_word():
    fnt = font("latin", 40)
    text = "a fairly long sentence that will not fit on one line of a narrow card\nsecond paragraph"
    lines = wrap(text, fnt, 300)
    assert all(fnt.getlength(line) <= 300 for line in lines)
    assert " ".join(lines).split() == text.split()
    assert [line for line in lines if line.startswith("second")]  # the paragraph starts a line
    long_word = wrap("x" * 80, fnt, 300)  # a word wider than the line is broken
    assert "".join(long_word) == "x" * 80 and len(long_word) > 1


@pytest.mark.parametrize("template, fmt", [("light", "PNG"), ("dark", "PNG"), ("meme", "JPEG")])
def test_a_rendering_is_deterministic_and_says_what_it_drew(template, fmt):
    a, b = render(TWEET, template, seed="138"), render(TWEET, template, seed="138")
    assert a == b
    img = Image.open(io.BytesIO(a.data))
    assert (img.format, img.size) == (fmt, (WIDTH, a.height)) and a.format == fmt
    assert "wearable projectors" in " ".join(a.text.split())
    assert "pic.twitter" not in a.text and "😮" not in a.text
    if template != "meme":
        assert a.text.splitlines()[:2] == ["LEE MIFSUD", "@LeeMifsud"]
        assert a.text.splitlines()[-1] == "October 5, 2019"


def test_korean_is_drawn_with_a_hangul_font():
    shot = render("로이터통신에 따르면 코와는 임상 3상 시험 결과를 발표했다.", "light", seed="1")
    assert "코와는" in shot.text
    img = np.asarray(Image.open(io.BytesIO(shot.data)).convert("L"))
    assert img.min() < 64  # dark glyphs were drawn, not empty boxes only


def test_bad_templates_and_undrawable_text_are_refused():
    with pytest.raises(BadInput, match="unknown template"):
        render("text", "polaroid")
    with pytest.raises(BadInput, match="nothing to draw"):
        render("🔥🔥 pic.twitter.com/abc", "light")
    assert set(TEMPLATES) == {"light", "dark", "meme"}


def test_arabic_needs_raqm():
    if raqm_available():
        assert render("مرحبا بالعالم", "light").width == WIDTH
    else:
        with pytest.raises(BadInput, match="raqm"):
            render("مرحبا بالعالم", "light")


def test_photos_are_seeded():
    assert photo(3, (64, 48)).tobytes() == photo(3, (64, 48)).tobytes()
    assert photo(3, (64, 48)).tobytes() != photo(4, (64, 48)).tobytes()
    assert photo(3, (64, 48)).size == (64, 48)
