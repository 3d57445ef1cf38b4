import random

import pytest

from plugin.learn.memory_reposts import (EDITS, HASHTAGS, add_emoji, change_case, drop_words, repost,
                                         retweet, swap_words, toggle_hashtag, toggle_link)

TEXT = "Five G masts spread the virus #covid https://t.co/abc"


def rng():
    return random.Random(7)


def test_drop_words_leaves_out_one_or_two():
    out = drop_words(TEXT, rng()).split()
    assert len(TEXT.split()) - len(out) in (1, 2) and set(out) <= set(TEXT.split())
    assert drop_words("too short", rng()) == "too short"


def test_swap_words_keeps_the_words():
    out = swap_words(TEXT, rng())
    assert out != TEXT and sorted(out.split()) == sorted(TEXT.split())


def test_links_and_hashtags_go_or_come():
    assert toggle_link(TEXT, rng()) == "Five G masts spread the virus #covid"
    assert toggle_link("no link", rng()).startswith("no link https://t.co/")
    assert toggle_hashtag(TEXT, rng()) == "Five G masts spread the virus https://t.co/abc"
    assert toggle_hashtag("no tag", rng()).split()[-1] in HASHTAGS


@pytest.mark.parametrize("edit", [change_case, retweet, add_emoji])
def test_the_other_edits_keep_the_words(edit):
    out = edit(TEXT, rng())
    assert TEXT.lower() in out.lower()


def test_a_repost_is_one_to_three_edits_and_the_same_for_a_seed():
    text, names = repost(TEXT, random.Random(1))
    assert 1 <= len(names) <= 3 and set(names) <= set(EDITS) and len(set(names)) == len(names)
    assert (text, names) == repost(TEXT, random.Random(1))
