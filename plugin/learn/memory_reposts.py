"""Re-posts as real streams have them: a post copied with small edits, for measuring the memory.

Each edit is a pure function ``(text, rng) -> text``; ``repost`` applies one to three of them,
chosen by a seeded ``random.Random``, so a stream is the same on every run. The edits are the
ones seen when a claim travels: words dropped or swapped, the case changed, a retweet prefix, a
link or a hashtag added or taken away, an emoji. Used by ``scripts/memory_stream.py``.
"""
from __future__ import annotations

import random
import re
from collections.abc import Callable

_URL = re.compile(r"(?:https?://|www\.)\S+|pic\.twitter\.com/\w+", re.IGNORECASE)
_HASHTAG = re.compile(r"#\w+")
HANDLES = ("newsdesk", "truthseeker", "maria_k", "daily_updates", "j0hn")
HASHTAGS = ("#breaking", "#news", "#wakeup", "#viral", "#share")
EMOJI = ("😡", "‼️", "👀", "🙏", "😱")


def drop_words(text: str, rng: random.Random) -> str:
    """One or two words left out (never all of them)."""
    words = text.split()
    if len(words) < 4:
        return text
    for _ in range(rng.choice((1, 2))):
        del words[rng.randrange(len(words))]
    return " ".join(words)


def swap_words(text: str, rng: random.Random) -> str:
    """Two neighbouring words in the other order."""
    words = text.split()
    if len(words) < 2:
        return text
    i = rng.randrange(len(words) - 1)
    words[i], words[i + 1] = words[i + 1], words[i]
    return " ".join(words)


def change_case(text: str, rng: random.Random) -> str:
    return rng.choice((str.lower, str.upper))(text)


def retweet(text: str, rng: random.Random) -> str:
    return f"RT @{rng.choice(HANDLES)}: {text}"


def toggle_link(text: str, rng: random.Random) -> str:
    """The post's links taken away, or one added when it has none."""
    if _URL.search(text):
        return " ".join(_URL.sub(" ", text).split())
    return f"{text} https://t.co/{''.join(rng.choice('abcdefghijkXYZ0123456789') for _ in range(10))}"


def toggle_hashtag(text: str, rng: random.Random) -> str:
    """A hashtag taken away, or one added when the post has none."""
    tags = _HASHTAG.findall(text)
    if tags:
        return " ".join(text.replace(rng.choice(tags), " ", 1).split())
    return f"{text} {rng.choice(HASHTAGS)}"


def add_emoji(text: str, rng: random.Random) -> str:
    return f"{text} {rng.choice(EMOJI)}" if rng.random() < 0.5 else f"{rng.choice(EMOJI)} {text}"


EDITS: dict[str, Callable[[str, random.Random], str]] = {
    "drop_words": drop_words, "swap_words": swap_words, "case": change_case, "retweet": retweet,
    "link": toggle_link, "hashtag": toggle_hashtag, "emoji": add_emoji,
}


def repost(text: str, rng: random.Random) -> tuple[str, list[str]]:
    """``text`` after one to three different edits, and their names in the order applied."""
    names = rng.sample(sorted(EDITS), rng.choice((1, 2, 3)))
    for name in names:
        text = EDITS[name](text, rng)
    return text, names
