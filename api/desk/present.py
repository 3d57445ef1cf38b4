"""What the desk's pages show and what their forms mean, as pure functions.

The filters of the queue page (language, confidence band, age) become ``ReviewDesk.queue``
arguments here; the buttons of an item (``choice``) and the bulk form become decision records;
a candidate's signals become the one line that says why it matched. Bad values are a
``BadInput`` naming the field and the values it takes, like the API's.
"""
from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, quote, urlencode, urlsplit

from plugin.errors import BadInput

#: Review states, in the order the page lists them.
PENDING = "pending"
DECIDED = ("confirmed", "rejected", "no_match", "not_a_claim")
STATUSES = (PENDING, *DECIDED)
STATUS_LABELS = {"pending": "Pending", "confirmed": "Confirmed", "rejected": "Rejected",
                 "no_match": "None of these", "not_a_claim": "Not a claim"}
#: Confidence bands: ``(min, max)``, either open.
CONFIDENCE = {"high": (0.8, None), "medium": (0.5, 0.8), "low": (None, 0.5)}
CONFIDENCE_LABELS = {"high": "High (≥ 0.8)", "medium": "Medium (0.5–0.8)", "low": "Low (< 0.5)"}
#: Age filters: items created within this long (the bands ``plugin.review.queries`` counts).
AGES = {"24h": timedelta(hours=24), "7d": timedelta(days=7)}
AGE_LABELS = {"24h": "Last 24 hours", "7d": "Last 7 days"}
SORTS = ("newest", "oldest", "confidence", "decided")
#: Actions a button may ask for (``choice`` is ``action`` or ``action:factcheck_id``).
ACTIONS = ("confirm", "reject", "none", "not_a_claim", "manual", "undo")
NEEDS_FACTCHECK = ("confirm", "manual")
#: How often the queue page asks whether new posts arrived (``/desk/fresh``), in seconds.
FRESH_POLL_S = 30
#: Keys ``1``–``5`` confirm the first five candidates.
KEYED_CANDIDATES = 5


def _one_of(field: str, value: str, valid: Any) -> str:
    if value not in valid:
        raise BadInput(f"unknown {field} {value[:80]!r}; valid: {', '.join(valid)}")
    return value


def queue_args(args: Mapping[str, str], now: datetime, *, status: str = PENDING) -> dict[str, Any]:
    """``ReviewDesk.queue`` keyword arguments from the page's query string (``lang``,
    ``confidence``, ``age``, ``sort``, ``cursor``, ``status``); empty values mean no filter."""
    out: dict[str, Any] = {"status": _one_of("status", args.get("status") or status, STATUSES),
                           "sort": _one_of("sort", args.get("sort") or "newest", SORTS)}
    lang = (args.get("lang") or "").strip().lower()
    if lang:
        if not (2 <= len(lang) <= 8 and lang.replace("-", "").isalpha()):
            raise BadInput(f"invalid language {lang[:20]!r}: an ISO 639-1 code such as 'en'")
        out["lang"] = lang
    band = args.get("confidence") or ""
    if band:
        out["min_confidence"], out["max_confidence"] = CONFIDENCE[_one_of("confidence", band, CONFIDENCE)]
    age = args.get("age") or ""
    if age:
        out["since"] = (now - AGES[_one_of("age", age, AGES)]).isoformat(timespec="seconds")
    if args.get("cursor"):
        out["cursor"] = args["cursor"]
    return out


def bulk_message(confirm: bool, asked: int, recorded: list[dict[str, Any]],
                 not_recorded: list[dict[str, Any]], skipped: int) -> str:
    """What the queue says after a bulk decision (pure): how many were recorded, and when a race
    kept some from being recorded (the API's 207), how many and which, and who decided them."""
    verb = "confirmed the top candidate of" if confirm else "rejected"
    n = len(recorded)
    out = f"You {verb} {n} item{'s' if n != 1 else ''}"
    if not_recorded:
        names = ", ".join(f"{short(x['post_id'], 40)!r}"
                          + (f" ({x['decision']['actor']})" if x.get("decision") else "")
                          for x in not_recorded[:5])
        more = f" and {len(not_recorded) - 5} more" if len(not_recorded) > 5 else ""
        out += (f" of {asked}. {len(not_recorded)} {'were' if len(not_recorded) != 1 else 'was'} "
                f"not recorded: someone decided {'them' if len(not_recorded) != 1 else 'it'} "
                f"first: {names}{more}")
    out += "."
    if skipped:
        out += f" {skipped} had no candidate to confirm and stay pending."
    return out


#: the longest return path a form may carry (a queue URL with every filter and a cursor fits)
MAX_TARGET = 2000


def local_target(target: str | None) -> str | None:
    """``target`` as a clean path on the desk, else ``None`` (pure). Clean: ``/desk`` itself or
    below it (``/desk/``, ``/desk?…``; not ``/desks``), at most ``MAX_TARGET`` characters, no
    backslash, no whitespace and above all no control or format character (Unicode category
    ``C*``): a CR or LF in a ``Location`` header makes werkzeug raise, and the desk answered 500
    *after* recording the decision the form carried. Other non-ASCII characters (an item page
    of a post id in Cyrillic) come back percent-encoded, so the header is plain ASCII."""
    if not target or len(target) > MAX_TARGET or not target.startswith("/desk"):
        return None
    if target[5:6] not in ("", "/", "?", "#") or "\\" in target:
        return None
    if any(ch.isspace() or unicodedata.category(ch).startswith("C") for ch in target):
        return None
    return quote(target, safe=_URL_SAFE)


#: what ``local_target`` leaves as it is: printable ASCII but the space (and ``%``, so an
#: already-encoded target is not encoded twice)
_URL_SAFE = "".join(chr(c) for c in range(0x21, 0x7f))


def filter_state(args: Mapping[str, str]) -> dict[str, str]:
    """The filters as the page's links keep them (no cursor: a new filter starts at the top)."""
    return {k: args[k] for k in ("status", "lang", "confidence", "age", "sort") if args.get(k)}


def parse_choice(choice: str | None) -> tuple[str, str | None]:
    """``"confirm:fc-1"`` → ``("confirm", "fc-1")``; ``"none"`` → ``("none", None)``. The fact-check
    id is everything after the first colon (ids may contain colons)."""
    action, _, factcheck_id = (choice or "").partition(":")
    _one_of("action", action, ACTIONS)
    if action in NEEDS_FACTCHECK and not factcheck_id:
        raise BadInput(f"action {action!r} needs a fact-check id ('{action}:<id>')")
    if action not in NEEDS_FACTCHECK and factcheck_id:
        raise BadInput(f"action {action!r} takes no fact-check id")
    return action, factcheck_id or None


def decision(post_id: str, choice: str | None, version: str | None, note: str | None = None) -> dict[str, Any]:
    """One ``ReviewDesk.decide`` record from an item's form."""
    if not post_id:
        raise BadInput("the form names no post (post_id)")
    action, factcheck_id = parse_choice(choice)
    out: dict[str, Any] = {"post_id": post_id, "action": action}
    if factcheck_id:
        out["factcheck_id"] = factcheck_id
    if version not in (None, ""):
        out["version"] = _version(version)
    if note and note.strip():
        out["note"] = note.strip()
    return out


def _version(value: str) -> str:
    """The item's version as the page got it (opaque to the page; ``ReviewDesk`` checks it)."""
    if len(value) > 100:
        raise BadInput(f"invalid item version {value[:20]!r}…: over 100 characters")
    return value


def pick_value(item: Mapping[str, Any]) -> str:
    """What an item's bulk checkbox sends: the post, the version the page was drawn with, and
    its top candidate, as one query string (ids may hold any character)."""
    cands = item.get("candidates") or []
    return urlencode({"post": item["post_id"], "v": item.get("version") or "",
                      "top": cands[0]["factcheck_id"] if cands else ""})


def bulk_decisions(picks: list[str], bulk: str | None) -> tuple[list[dict[str, Any]], list[str]]:
    """The bulk form's decisions and the posts it leaves alone: for each ticked item
    (``pick_value``), confirm its top candidate, or reject all (``none`` for an item without
    candidates: nothing to reject, and no match); an item without candidates has no top to
    confirm and is left pending. Each decision carries the item's version so a reviewer never
    overwrites what someone else decided since the page was drawn."""
    _one_of("bulk action", bulk or "", ("confirm_top", "reject"))
    if not picks:
        raise BadInput("no items selected: tick the items (or 'select all visible') first")
    out: dict[str, dict[str, Any]] = {}
    skipped: list[str] = []
    for pick in picks:
        fields = parse_qs(pick[:2000], keep_blank_values=True)
        post_id = (fields.get("post") or [""])[0]
        if not post_id:
            raise BadInput("a ticked item names no post: reload the page and try again")
        top = (fields.get("top") or [""])[0]
        if bulk == "confirm_top" and not top:
            skipped.append(post_id)
            continue
        item: dict[str, Any] = ({"post_id": post_id, "action": "confirm", "factcheck_id": top}
                                if bulk == "confirm_top" else
                                {"post_id": post_id, "action": "reject" if top else "none"})
        version = (fields.get("v") or [""])[0]
        if version:
            item["version"] = _version(version)
        out.setdefault(post_id, item)
    if not out:
        raise BadInput("none of the selected items has a candidate to confirm")
    return list(out.values()), list(dict.fromkeys(skipped))


#: the confidence bar's width in steps of 5 % (``w0``…``w20`` in desk.css: the page's CSP
#: allows no inline styles)
BAR_STEPS = 20


def bar_class(value: Any) -> str:
    """The confidence bar's classes: its width step and its band (``low``/``medium``/``high``)."""
    if value is None:
        return "w0 unknown"
    v = min(max(float(value), 0.0), 1.0)
    band = next(name for name, (low, _) in CONFIDENCE.items() if low is None or v >= low)
    return f"w{round(v * BAR_STEPS)} {band}"


def seen_at_newest(items: list[Mapping[str, Any]]) -> int:
    """How many of a newest-first page's items share the newest item's time (``/desk/fresh``
    counts from that time on, so these are not new)."""
    return sum(1 for i in items if items and i.get("created_at") == items[0].get("created_at"))


def fresh_count(counts: Mapping[str, Any], seen: str | None) -> int:
    """New pending items: those counted from the newest shown item's time, less those shown."""
    try:
        shown = max(0, int(seen or 0))
    except ValueError:
        raise BadInput(f"invalid seen {str(seen)[:20]!r}: a count of items") from None
    return max(0, int((counts.get("status") or {}).get(PENDING, 0)) - shown)


def safe_url(url: Any) -> str | None:
    """``url`` when it is an http(s) link, else ``None``: escaping does not make a
    ``javascript:`` URL harmless in an ``href``."""
    if not isinstance(url, str):
        return None
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    return url.strip() if parts.scheme.lower() in ("http", "https") and parts.netloc else None


def why_matched(signals: Mapping[str, Any] | None) -> str:
    """One line: for a post with an image, whether the same image or the text read from it
    found the candidate; then BM25 rank, kNN similarity, reranked or not (what the retrievers
    said)."""
    signals = signals or {}
    parts = []
    found = {s.get("signal"): s for s in signals.get("found_by") or () if isinstance(s, Mapping)}
    if "same-image" in found:
        distance = found["same-image"].get("distance")
        parts.append("same image" + (f" (distance {int(distance)})" if isinstance(distance, int) else ""))
    if "ocr" in found:
        parts.append("text read from the image")
    bm25 = signals.get("bm25_rank")
    parts.append(f"BM25 rank {bm25}" if bm25 is not None else "not found by BM25")
    knn = signals.get("knn_similarity")
    parts.append(f"kNN similarity {float(knn):.2f}" if knn is not None else "not found by kNN")
    if signals.get("reranked"):
        score = signals.get("rerank_score")
        parts.append("reranked" + (f" (score {float(score):.2f})" if score is not None else ""))
    else:
        parts.append("not reranked")
    return " · ".join(parts)


def age_counts(bands: Mapping[str, int]) -> dict[str, int]:
    """The age filters' counts from the queue's age bands (``day``: the last 24 hours, ``week``:
    1 to 7 days old): the filters are cumulative, the bands are not."""
    day, week = bands.get("day", 0), bands.get("week", 0)
    return {"24h": day, "7d": day + week}


def any_count(by_lang: Mapping[str, int]) -> int:
    """What "any language" holds under the other filters: the languages' counts summed."""
    return sum(by_lang.values())


def shown_count(candidates: list[Mapping[str, Any]], ratio: float) -> int:
    """How many of an item's candidates (in rank order) the desk shows unfolded: all up to the
    first whose confidence is below ``ratio`` × the top candidate's; the rest are folded under
    "n more". The first is always shown; without confidences (a configuration without a
    confidence model) nothing is folded, as nothing says what is unlikely."""
    top = candidates[0].get("confidence") if candidates else None
    if top is None or ratio <= 0:
        return len(candidates)
    for i, c in enumerate(candidates[1:], start=1):
        if c.get("confidence") is not None and c["confidence"] < ratio * top:
            return i
    return len(candidates)


def caption(item: Mapping[str, Any]) -> str:
    """An image post's own text: its item's text is the caption, then the text read from the
    image (``plugin.search.image_query.post_text``), which the desk shows beside the image."""
    text, read = item.get("text") or "", ((item.get("image") or {}).get("ocr_text") or "").strip()
    if read and text.rstrip().endswith(read):
        return text.rstrip()[:-len(read)].strip()
    return text


def confidence_text(value: Any) -> str:
    return "unknown" if value is None else f"{float(value):.2f}"


def short(text: str | None, n: int = 80) -> str:
    """The start of ``text`` on one line (headings and labels)."""
    one = " ".join((text or "").split())
    return one if len(one) <= n else one[: n - 1].rstrip() + "…"


def dom_id(post_id: str) -> str:
    """A stable HTML id for a post's item (post ids may hold any character; CSS selectors not)."""
    return "item-" + hashlib.sha256(post_id.encode("utf-8")).hexdigest()[:16]
