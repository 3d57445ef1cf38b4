"""Clean an incoming social-media post before it is matched against fact-checks.

URLs, mentions and the embedded-tweet signature carry no claim content but do carry tokens that
BM25 and the embedding model would otherwise match on; hashtags and emoji do carry content, so
they are turned into words. The caller keeps the original text: this is only the query form.
"""
from __future__ import annotations

import html
import re
from datetime import date

__all__ = ["extract_post_date", "normalize_post"]

_MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
    "oct": 10, "nov": 11, "dec": 12,
}
_MONTH = (r"(?P<month>January|February|March|April|May|June|July|August|September|October|"
          r"November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?")

#: The line Twitter's embed code leaves at the end of a copied tweet:
#: "— Name (@handle) Month D, YYYY". The name may hold anything but another dash, which keeps
#: the search linear (no overlapping quantifiers to backtrack through on long posts).
_SIGNATURE = re.compile(
    r"[—–](?P<name>[^—–\n]*?)\(@(?P<handle>\w+)\)\s+" + _MONTH
    + r"\s+(?P<day>\d{1,2}),\s+(?P<year>\d{4})\s*$")
#: Often glued to the word before it ("#WW3pic.twitter.com/x"), so no word boundary.
_PIC = re.compile(r"pic\.twitter\.com/\w+", re.IGNORECASE)
_URL = re.compile(r"(?:https?://|www\.)\S+", re.IGNORECASE)
_RETWEET = re.compile(r"^\s*RT\s+@\w+:?", re.IGNORECASE)
#: A mention, or a run of them glued together ("@a@b"); not the middle of an e-mail address.
_MENTION = re.compile(r"(?<!\w)@\w+(?:@\w+)*")
#: No look-behind: hashtags are often glued ("#kankaria#adventure").
_HASHTAG = re.compile(r"#(\w+)")
_EMOJI_OPEN, _EMOJI_CLOSE = "\ue000", "\ue001"  # private-use: never in real text
#: Neither delimiter inside an alias, so each scan stops at the next delimiter and the search
#: stays linear (a post of 20,000 "\ue000" made ``[^CLOSE]*`` rescan the rest from each one).
_EMOJI_ALIAS = re.compile(_EMOJI_OPEN + "([^" + _EMOJI_OPEN + _EMOJI_CLOSE + "]*)" + _EMOJI_CLOSE)
#: The delimiters themselves when a post brings them: removed before ``demojize`` adds its own.
_EMOJI_DELIMITERS = re.compile("[" + _EMOJI_OPEN + _EMOJI_CLOSE + "]")
#: Zero-width space, word joiner and invisible operators, bidi isolates, BOM. Not ZWJ/ZWNJ:
#: emoji sequences and Indic and Persian spelling need them.
_INVISIBLE = re.compile("[\u200b\u2060-\u2064\u2066-\u2069\ufeff]")
_SPACE = re.compile(r"\s+")


def split_camel_case(word: str) -> str:
    """"StayHome" → "Stay Home", "TrumpUKVisit" → "Trump UK Visit", "Covid19Vaccine" →
    "Covid19 Vaccine" (digits stay with the word before them; "2A" stays whole).

    Works on any cased script (``str.isupper``); "_" separates words too.
    """
    out: list[str] = []
    for i, ch in enumerate(word):
        if ch == "_":
            out.append(" ")
            continue
        if i and ch.isupper():
            prev = word[i - 1]
            nxt = word[i + 1] if i + 1 < len(word) else ""
            after_digits = prev.isdigit() and any(c.isalpha() for c in word[:i])
            if prev.islower() or after_digits or (prev.isupper() and nxt.islower()):
                out.append(" ")
        out.append(ch)
    return _SPACE.sub(" ", "".join(out)).strip()


def _emoji_alias(match: re.Match[str]) -> str:
    return " " + match.group(1).replace("_", " ") + " "


def _signature_words(match: re.Match[str]) -> str:
    return f" {match.group('name')} {split_camel_case(match.group('handle'))} "


def _mention_words(match: re.Match[str]) -> str:
    return " " + " ".join(split_camel_case(h) for h in match.group(0).split("@") if h) + " "


def normalize_post(text: str) -> str:
    """The matching form of a post: no URLs or dates of a tweet signature; words for mentions,
    hashtags and emoji (``emoji.demojize`` English aliases); HTML entities decoded; whitespace
    collapsed.

    Who posted and whom a post mentions often names the claim's subject ("— Donald J. Trump
    (@realDonaldTrump)"), so the signature's name and handles stay as words (what dropping them
    cost BM25: docs/design/measurements.md).
    """
    text = html.unescape(text)
    text = _INVISIBLE.sub("", text)
    text = _SIGNATURE.sub(_signature_words, text)
    text = _PIC.sub(" ", text)
    text = _URL.sub(" ", text)
    text = _RETWEET.sub(" ", text)
    text = _MENTION.sub(_mention_words, text)
    text = _HASHTAG.sub(lambda m: " " + split_camel_case(m.group(1)), text)
    import emoji  # ~40 ms of tables: loaded on first use, not with the CLI or API import

    text = emoji.demojize(_EMOJI_DELIMITERS.sub("", text), delimiters=(_EMOJI_OPEN, _EMOJI_CLOSE))
    text = _EMOJI_ALIAS.sub(_emoji_alias, text)
    return _SPACE.sub(" ", text).strip()


def extract_post_date(text: str) -> date | None:
    """The date in a trailing embedded-tweet signature ("— Name (@handle) January 8, 2020").

    ``None`` when there is no signature or its date does not exist (February 30).
    """
    match = _SIGNATURE.search(_INVISIBLE.sub("", html.unescape(text)))
    if match is None:
        return None
    month = _MONTHS[match.group("month")[:3].lower()]
    try:
        return date(int(match.group("year")), month, int(match.group("day")))
    except ValueError:
        return None
