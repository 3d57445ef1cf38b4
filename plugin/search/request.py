"""What a match is asked: ``MatchRequest``, read from any mapping by one parser and checked by
one set of rules, whoever asks (the HTTP route, a queued post, the CLI)."""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any

from plugin.errors import BadInput
from plugin.models import LANG_CODE, MAX_K, MAX_TEXT_CHARS, MAX_WITHIN_DAYS, Mode

if TYPE_CHECKING:
    from plugin.image.model import ImageAnalysis

_LANG = re.compile(LANG_CODE)
#: the largest cross-encoder budget a request may give (one minute)
MAX_RERANK_BUDGET_MS = 60_000


@dataclass(frozen=True)
class MatchRequest:
    text: str
    lang: str | None = None
    date: date | None = None
    mode: Mode = Mode.AUTO
    k: int = 10
    within_days: int | None = None
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    #: ``None``: rerank whenever the configuration has a rerank stage and the matcher a reranker;
    #: ``True``: the caller asked for it (the result notes when it could not); ``False``: never.
    rerank: bool | None = None
    #: the cross-encoder's time budget (a live request's): only as many of the fused head as
    #: fit are reranked, none when fewer than two fit (the result says so); ``None``: no budget
    rerank_budget_ms: float | None = None
    #: the post's image as the image stage read it (``plugin.image.stage.analyse``): its OCR
    #: text is matched as a query set of its own and its hashes against fact-checks' images;
    #: ``text`` is then the caption, and may be empty
    image: ImageAnalysis | None = None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, text_field: str = "text",
                     budget_ms: float | None = None, image: ImageAnalysis | None = None) -> MatchRequest:
        """A validated request from a mapping: a JSON body or job input (dates as ISO strings,
        modes as names), a pydantic model's dump or the CLI's arguments. Keys it does not know
        are ignored. ``budget_ms``: the live rerank budget when the mapping gives none.
        ``image``: the post's analysed image (the mapping's text may then be missing)."""
        day = data.get("date")
        if isinstance(day, str) and day:
            try:
                day = date.fromisoformat(day)
            except ValueError:
                raise BadInput(f"date must be YYYY-MM-DD, got {day!r}") from None
        elif not isinstance(day, date):
            day = None
        budget = data.get("rerank_budget_ms")
        text = data.get(text_field)
        return cls(text="" if text is None and image is not None else text,  # type: ignore[arg-type]
                   lang=data.get("lang"), date=day, image=image,
                   mode=Mode.parse(data.get("mode") or Mode.AUTO), k=_integer(data, "k", 10),
                   within_days=_integer(data, "within_days", None),
                   allow=tuple(data.get("allow") or ()), deny=tuple(data.get("deny") or ()),
                   rerank=data.get("rerank"),
                   rerank_budget_ms=budget_ms if budget is None else _number(budget)).validated()

    def validated(self) -> MatchRequest:
        """This request, once every rule holds (``BadInput`` naming the first that does not).
        The one place that says a post needs a text or an image."""
        if not isinstance(self.text, str) or (not self.text.strip() and self.image is None):
            raise BadInput("text is empty: give the post or claim to match, or its image")
        if len(self.text) > MAX_TEXT_CHARS:
            raise BadInput(f"text is longer than {MAX_TEXT_CHARS} characters")
        if not 1 <= self.k <= MAX_K:
            raise BadInput(f"k must be between 1 and {MAX_K}, got {self.k}")
        check_lang(self.lang)
        if self.within_days is not None and not 0 <= self.within_days <= MAX_WITHIN_DAYS:
            raise BadInput(f"within_days must be between 0 and {MAX_WITHIN_DAYS}")
        if self.within_days is not None and self.date is None:
            raise BadInput("within_days needs a date: the window ends at the post date")
        if self.rerank_budget_ms is not None and not 0 < self.rerank_budget_ms <= MAX_RERANK_BUDGET_MS:
            raise BadInput(f"rerank_budget_ms must be between 0 and {MAX_RERANK_BUDGET_MS}")
        return self


def check_lang(lang: Any) -> str | None:
    """``lang`` when it is ``None`` or an ISO 639-1 code; ``BadInput`` otherwise (checked before
    an image is read in it, too)."""
    if lang is not None and not (isinstance(lang, str) and _LANG.match(lang)):
        raise BadInput(f"lang must be an ISO 639-1 code such as 'en', got {lang!r}")
    return lang


def _integer(data: Mapping[str, Any], name: str, default: int | None) -> Any:
    value = data.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInput(f"{name} must be an integer, got {value!r}")
    return value


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadInput(f"rerank_budget_ms must be between 0 and {MAX_RERANK_BUDGET_MS}")
    return float(value)
