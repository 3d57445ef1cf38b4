"""normalize_post / extract_post_date as (input, expected) tables."""
from __future__ import annotations

import re
from datetime import date

import pytest

from plugin.search.normalize import (_EMOJI_ALIAS, extract_post_date, normalize_post,
                                     split_camel_case)

NORMALIZE = [
    # URLs, pic.twitter.com (often glued to the previous word)
    ("Read this https://t.co/AbC123 now", "Read this now"),
    ("see www.example.com/page?x=1 here", "see here"),
    ("#WW3pic.twitter.com/4Fe9e1rAJE", "WW3"),
    ("unearthed https://t.co/F8pBZx9JLIpic.twitter.com/ENFUiQDifv", "unearthed"),
    # mentions become words (glued runs too), retweet markers go; e-mail addresses are not mentions
    ("Tried to show @BorisJohnson the picture", "Tried to show Boris Johnson the picture"),
    ("cc: @juliegraceb@mkraju@DailyCaller done", "cc: juliegraceb mkraju Daily Caller done"),
    (".@ChelseaClinton claims", ". Chelsea Clinton claims"),
    ("RT @someone: the claim", "the claim"),
    ("write to press@example.org", "write to press@example.org"),
    # hashtags, CamelCase split, glued hashtags
    ("#StayHome and #COVID19", "Stay Home and COVID19"),
    ("#TrumpUKVisit#TrumpNotWelcome", "Trump UK Visit Trump Not Welcome"),
    ("Ride collapsing at #kankaria#adventure#park in #Ahmedabad",
     "Ride collapsing at kankaria adventure park in Ahmedabad"),
    ("no impacts from #Dorian.", "no impacts from Dorian."),
    ("#stay_safe", "stay safe"),
    ("#코로나19 확산", "코로나19 확산"),
    ("C# is a language", "C# is a language"),
    # emoji → English alias words
    ("I ❤️ NY", "I red heart NY"),
    ("🙏🏼🙏🏼 THANK GOD", "folded hands medium-light skin tone folded hands medium-light skin tone THANK GOD"),
    ("Travis 🇺🇸", "Travis United States"),
    # HTML entities, invisible characters, whitespace
    ("rich &amp; corporations &quot;ok&quot;", 'rich & corporations "ok"'),
    ("EXCLUSIVE: \u2066@realDonaldTrump\u2069’s letter", "EXCLUSIVE: real Donald Trump ’s letter"),
    ("  many\n\n  spaces\there  ", "many spaces here"),
    # the embedded-tweet signature, with the rest of the cleaning
    ("Stop congratulating Obama for killing Bin Laden. The Navy Seals killed Bin Laden. #debate "
     "— Donald J. Trump (@realDonaldTrump) October 23, 2012",
     "Stop congratulating Obama for killing Bin Laden. The Navy Seals killed Bin Laden. debate Donald J. Trump real Donald Trump"),
    ("Happening right now at the Trump Tower Hotel in Las Vegas.#KurdsBetrayedByTrump "
     "pic.twitter.com/QbZyOXkiNn — Paul Lidicul (@PaulLidicul) October 9, 2019",
     "Happening right now at the Trump Tower Hotel in Las Vegas. Kurds Betrayed By Trump Paul Lidicul Paul Lidicul"),
    ("I don’t know whether to laugh or cry. #trumppresser "
     "— Travis Allen 🇺🇸 (@TravisAllen02) October 16, 2019",
     "I don’t know whether to laugh or cry. trumppresser Travis Allen United States Travis Allen02"),
    ("Report: arrests https://t.co/iPPXwscjHD &mdash; FOX &amp; friends (@foxandfriends) "
     "October 30, 2017", "Report: arrests FOX & friends foxandfriends"),
    # a dash in the body is not a signature
    ("he is: — “The King of Israel” — “The Chosen One”", "he is: — “The King of Israel” — “The Chosen One”"),
    ("", ""),
]


@pytest.mark.parametrize(("text", "expected"), NORMALIZE)
def test_normalize_post(text, expected):
    assert normalize_post(text) == expected


@pytest.mark.parametrize(("word", "expected"), [
    ("StayHome", "Stay Home"),
    ("TrumpUKVisit", "Trump UK Visit"),
    ("COVID19", "COVID19"),
    ("Covid19Vaccine", "Covid19 Vaccine"),
    ("2A", "2A"),
    ("DYK", "DYK"),
    ("stay_home", "stay home"),
    ("lowercase", "lowercase"),
])
def test_split_camel_case(word, expected):
    assert split_camel_case(word) == expected


EXTRACT = [
    ("Fact check: ... pic.twitter.com/3S32De8ekP — U.S. Army CGSC (@USACGSC) January 8, 2020",
     date(2020, 1, 8)),
    ("Texas & Florida are doing great. — Donald J. Trump (@realDonaldTrump) September 26, 2017",
     date(2017, 9, 26)),
    ("Crazy — FOX &amp; friends (@foxandfriends) October 30, 2017", date(2017, 10, 30)),
    ("short month — Someone (@some_one) Sept 3, 2019", date(2019, 9, 3)),
    ("impossible — Someone (@some_one) February 30, 2019", None),
    ("signature not at the end — A (@a) June 1, 2019 and more text", None),
    ("no signature at all", None),
    ("", None),
]


@pytest.mark.parametrize(("text", "expected"), EXTRACT)
def test_extract_post_date(text, expected):
    assert extract_post_date(text) == expected


# --- the emoji-alias pattern is linear (issue 21: a post of 20,000 "\ue000" rescanned) ---------

OLD_EMOJI_ALIAS = re.compile("\ue000([^\ue001]*)\ue001")


@pytest.mark.parametrize("text", [
    "\ue000face_with_tears_of_joy\ue001",
    "I love it \ue000fire\ue001\ue000red_heart\ue001 ok",
    "no emoji here",
    "\ue000\ue001",
])
def test_emoji_alias_matches_as_before_on_demojized_text(text):
    new = [(m.span(), m.group(1)) for m in _EMOJI_ALIAS.finditer(text)]
    assert new == [(m.span(), m.group(1)) for m in OLD_EMOJI_ALIAS.finditer(text)]


def test_emoji_alias_never_spans_another_delimiter():
    """Each scan stops at the next opening delimiter, so it cannot rescan a long run of them."""
    match = _EMOJI_ALIAS.search("\ue000\ue000\ue000fire\ue001")
    assert match.span() == (2, 8) and match.group(1) == "fire"


@pytest.mark.parametrize("text", ["\ue000" * 20000, "\ue000x" * 10000, "\ue001\ue000" * 10000])
def test_delimiters_in_a_post_are_not_emoji(text):
    assert normalize_post(text) == normalize_post(text.replace("\ue000", "").replace("\ue001", ""))


def test_a_post_cannot_fake_an_emoji_alias():
    assert normalize_post("x\ue000smile\ue001y") == "xsmiley"
