"""The records FactSieve passes around: fact-checks in, matches out.

``FactCheck`` validates one incoming record (whatever format it came in); ``Hit`` is one result
of one retrieval query (the contract every fusion function works on); ``Match`` is what callers
see, with the per-query ranks that explain it.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from enum import Enum
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

#: Request limits, in one place: the library enforces them (``MatchRequest.validated``,
#: ``FactCheck``) and the API's schemas declare them (so ``/openapi.json`` documents them).
MAX_TEXT_CHARS = 20000
MAX_K = 100
MAX_WITHIN_DAYS = 36500
#: A language as the API and the matcher take it: ISO 639-1 (639-3 where there is no 639-1).
LANG_CODE = r"^[a-z]{2,3}$"
#: C0 and C1 control characters and DEL: never in an id or URL a client sends. Ids are hashed,
#: joined into keys and logged; a separator such as ``\x1f`` inside one once let it pose as
#: another (a default-tenant post id as another tenant's).
CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def no_control_chars(value: Any) -> Any:
    """A pydantic validator: refuses a string holding a control character, naming which."""
    if isinstance(value, str):
        found = CONTROL_CHARS.search(value)
        if found:
            raise ValueError(f"must not contain control characters (found U+{ord(found.group()):04X})")
    return value


class Verdict(str, Enum):
    """The four AVeriTeC verdict classes FactSieve normalises published ratings to."""

    SUPPORTED = "Supported"
    REFUTED = "Refuted"
    NOT_ENOUGH_EVIDENCE = "Not Enough Evidence"
    CONFLICTING = "Conflicting Evidence/Cherrypicking"


class Mode(str, Enum):
    """Which fact-checks a post may match: its own language only (``mono``), any language
    (``cross``), or any language with a small preference for its own (``auto``)."""

    MONO = "mono"
    CROSS = "cross"
    AUTO = "auto"

    @classmethod
    def parse(cls, value: str | Mode) -> Mode:
        from plugin.errors import BadInput

        if isinstance(value, Mode):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            valid = ", ".join(m.value for m in cls)
            raise BadInput(f"unknown mode {value!r}; valid modes: {valid}") from None


# Rating words as fact-checkers publish them, lower-cased, per verdict. Matched as whole
# phrases against the normalised rating; the first verdict whose phrase matches wins, so the
# mixed ratings ("half true", "mostly false") are checked before the plain ones.
_RATING_PHRASES: list[tuple[Verdict, tuple[str, ...]]] = [
    (Verdict.CONFLICTING, (
        "half true", "half-true", "mixture", "mixed", "misleading", "cherry", "partly false",
        "partly true", "partially false", "partially true", "mostly false", "mostly true",
        "missing context", "out of context", "lacks context", "exaggerated", "distorted",
        "engañoso", "enganoso", "parcialmente", "verdad a medias", "impreciso", "sin contexto",
        "trompeur", "partiellement", "en partie", "teilweise", "irreführend", "irrefuhrend",
        "enganador", "enganadora", "distorcido", "exagerado", "kısmen", "yanıltıcı",
        "częściowo", "manipulacja", "separuh", "mengelirukan", "일부", "대체로",
    )),
    (Verdict.NOT_ENOUGH_EVIDENCE, (
        "unproven", "unverified", "unsupported", "no evidence", "not enough", "undetermined",
        "unclear", "unknown", "research in progress", "sin evidencia", "no verificable",
        "non prouvé", "invérifiable", "unbelegt", "não comprovado", "sem provas",
        "kanıtlanamadı", "belum terbukti", "판단 유보",
    )),
    (Verdict.REFUTED, (
        "false", "fake", "pants on fire", "incorrect", "wrong", "hoax", "scam", "not true",
        "untrue", "fabricated", "debunked", "satire", "miscaptioned", "misattributed",
        "falso", "falsa", "bulo", "faux", "fausse", "infox", "falsch", "fälschung",
        "yanlış", "asılsız", "fałsz", "nieprawda", "palsu", "salah", "hoaks",
        "거짓", "사실 아님", "ผิด", "เท็จ", "ग़लत", "गलत", "फर्जी", "كاذب", "زائف", "خطأ",
    )),
    (Verdict.SUPPORTED, (
        "true", "correct", "accurate", "verdadero", "verdadeiro", "cierto", "vrai", "richtig",
        "wahr", "doğru", "prawda", "benar", "사실", "จริง", "सही", "سليم", "صحيح",
    )),
]


def normalise_rating(rating: str | None) -> Verdict | None:
    """Map a published rating ("Pants on Fire!", "Falso", "Mostly True") to a ``Verdict``.

    Returns ``None`` when nothing is recognised: an unknown rating is kept as published and
    never guessed.
    """
    if not rating:
        return None
    text = " " + re.sub(r"[^\w\s-]", " ", rating.lower()) + " "
    text = re.sub(r"\s+", " ", text)
    for verdict, phrases in _RATING_PHRASES:
        for phrase in phrases:
            if f" {phrase} " in text or (not phrase.isascii() and phrase in text):
                return verdict
    return None


def stable_id(given: str | None, url: str | None, claim: str, lang: str | None) -> str:
    """The document id: the given id, else a hash of the URL and claim, else of claim and language.

    Re-ingesting a record therefore updates the same document instead of duplicating it. The
    claim is part of the URL key because one fact-check article often reviews several claims
    (several ClaimReviews share its URL); a URL alone would let them overwrite each other.
    """
    if given is not None and str(given).strip():
        return str(given).strip()
    claim_key = " ".join(claim.split())
    key = f"{url.strip()}\x1f{claim_key}" if url and url.strip() else f"{lang or ''}\x1f{claim_key}"
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:20]


def _parse_date(value: Any) -> date | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, bool):
        raise ValueError(f"not a date: {value!r}")
    if isinstance(value, (int, float)):  # unix seconds, as MultiClaim uses
        try:
            return datetime.fromtimestamp(float(value), tz=timezone.utc).date()
        except (OverflowError, OSError, ValueError):  # 1e300, 1e18, inf, nan: no calendar date
            raise ValueError(f"not a date: {value!r} seconds is out of range") from None
    text = str(value).strip()
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).date()
    except ValueError:
        pass
    try:
        return date.fromisoformat(text[:10])
    except ValueError:
        raise ValueError(f"not an ISO date: {text!r}") from None


class FactCheck(BaseModel):
    """One published fact-check, validated. Unknown extra fields are kept in ``extra``."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    id: str | None = None
    claim: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    title: str | None = None
    url: str | None = None
    domain: str | None = None
    publisher: str | None = None
    rating: str | None = None
    verdict: Verdict | None = None
    lang: str | None = None
    published_at: date | None = None
    claimant: str | None = None
    source: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    #: The fact-check's image, as the record gives it; never stored as given (ingest stores what
    #: the image stage reads from it, ``plugin.ingest.images``): its bytes in base64, a local
    #: file (the CLI's ``factsieve ingest`` only) or an http(s) URL, read in that order of
    #: preference when a record gives several.
    image_base64: str | None = Field(default=None, repr=False)
    image_path: str | None = None
    image_url: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            if "published_at" not in data and "date" in data:
                data["published_at"] = data.pop("date")
            for k in ("id",):
                if isinstance(data.get(k), (int, float)):
                    data[k] = str(data[k])
        return data

    @field_validator("id")
    @classmethod
    def _id(cls, v: str | None) -> str | None:
        # OpenSearch refuses ids over 512 bytes for the whole bulk request, not per document:
        # catch them here so one bad id cannot sink its neighbours.
        if v is not None and len(v.encode("utf-8")) > 512:
            raise ValueError("id is longer than 512 bytes")
        return no_control_chars(v)

    @field_validator("published_at", mode="before")
    @classmethod
    def _date(cls, v: Any) -> date | None:
        return _parse_date(v)

    @field_validator("lang", mode="before")
    @classmethod
    def _lang(cls, v: Any) -> str | None:
        if v is None or str(v).strip() == "":
            return None
        code = str(v).strip().lower().replace("_", "-").split("-")[0]
        if not re.fullmatch(r"[a-z]{2,3}", code):
            raise ValueError(f"not a language code: {v!r}")
        return code

    @field_validator("url", "image_url", mode="before")
    @classmethod
    def _url(cls, v: Any) -> str | None:
        if v is None or str(v).strip() == "":
            return None
        text = no_control_chars(str(v).strip())
        parts = urlsplit(text)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"not an http(s) URL: {text!r}")
        return text

    @model_validator(mode="after")
    def _derive(self) -> FactCheck:
        if self.domain is None and self.url:
            host = urlsplit(self.url).hostname or ""
            self.domain = host[4:] if host.startswith("www.") else host or None
        if self.verdict is None:
            self.verdict = normalise_rating(self.rating)
        self.id = stable_id(self.id, self.url, self.claim, self.lang)
        return self

    @property
    def has_image(self) -> bool:
        return bool(self.image_base64 or self.image_path or self.image_url)

    def to_source(self) -> dict[str, Any]:
        """The document body stored in OpenSearch (``STORED_FIELDS``, without the embedding)."""
        doc = {name: getattr(self, name) for name in STORED_FIELDS}
        return {k: v.value if isinstance(v, Enum) else v.isoformat() if isinstance(v, date) else v
                for k, v in doc.items() if v is not None}


#: why a candidate leads a match that learning put first: the desk confirmed it for a
#: near-identical post (``plugin.learn.memory``), or for the post's claim (``plugin.claims.answer``).
#: The one place these reasons are named; a person answered it in both cases.
CONFIRMED_BY_DESK = "confirmed-by-desk"
CONFIRMED_FOR_CLAIM = "confirmed-for-claim"
DESK_ANSWERED = (CONFIRMED_BY_DESK, CONFIRMED_FOR_CLAIM)


def post_doc_id(tenant: str, post_id: str) -> str:
    """A post's document id in the posts index: one per (tenant, post), so writing it again
    replaces it (the one place: the memory writes posts, the claims read and re-point them)."""
    return "ps_" + hashlib.sha256(f"{tenant}\x1f{post_id}".encode()).hexdigest()[:32]


#: The fields of a stored fact-check, all JSON strings: ``FactCheck.to_source`` writes them, the
#: final fetch of a match reads them (``queries.SOURCE_FIELDS``), and matches and the API's
#: fact-check schemas return them. Add a field here and every one of those follows.
STORED_FIELDS = ("id", "claim", "title", "url", "domain", "publisher", "rating", "verdict", "lang",
                 "published_at", "claimant", "source")


@dataclass(frozen=True)
class Hit:
    """One document returned by one retrieval query, with its 1-based rank in that query."""

    id: str
    score: float
    rank: int
    query: str
    source: dict[str, Any] | None = None


@dataclass(frozen=True)
class Fused:
    """A document after fusion: fused score and rank, and the per-query hits that produced it."""

    id: str
    score: float
    rank: int
    contributions: dict[str, Hit] = field(default_factory=dict)

    @property
    def source(self) -> dict[str, Any] | None:
        for hit in self.contributions.values():
            if hit.source is not None:
                return hit.source
        return None
