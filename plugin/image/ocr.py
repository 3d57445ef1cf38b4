"""Reading the text in an image with Tesseract (``tesserocr`` over Debian's Tesseract 5).

The recipe: page segmentation mode 6 (one uniform block: the default mode finds no text on
busy backgrounds), run over three versions of the image, keeping the most confident:

- ``white``: a mask of the near-white, unsaturated pixels (meme text), black on white;
- ``bright``: a mask of the pixels above a high luminance (coloured or tinted captions);
- ``image``: the image itself in greyscale (text cards, screenshots).

A mask that marks more than half of the image marks its background, and one that marks almost
nothing marks no text: either is not read. Confidence is the mean word confidence weighted by
characters; a pass that reads nothing does not count, and a pass at least
:data:`CONFIDENT` stops the search.

When the language is not known, the passes are read first at half size with every script model
at once (``Latin+kor+hin+ara``, the installed ones); the Unicode script most of the letters read
are in picks one single-script model, which then reads with the whole recipe. (Combined model
strings read worse than one model, so they only route.)

Every reading has a time budget (``budget_s``, total across the routing read and the passes):
each pass's recognition is given what is left as Tesseract's deadline (``Recognize(timeout=)``,
its ``ETEXT_DESC`` monitor), a pass it cancels counts for nothing (its partial page is never
iterated), and no pass starts once the budget is spent. What the image may cost is then the
budget plus one layout analysis (Tesseract cannot cancel that; it is bounded by the image's
area, at most ``decode.MAX_SIDE`` squared: 0.8 s for a 2000×2000 page of dense text), whatever
the image says. The result says so (``budget_spent``) and keeps the best pass that finished.

Tesseract APIs are not thread-safe and take a while to load: each model has a pool of loaded
APIs, taken by one reader at a time and kept for the next (a worker keeps its models loaded).
"""
from __future__ import annotations

import queue
import threading
import time
import unicodedata
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from plugin.errors import BadInput
from plugin.image.model import OcrResult

if TYPE_CHECKING:
    from plugin.settings import Settings

#: ISO 639-1 code → Tesseract's language pack (``tesseract-ocr-<pack>`` on Debian): the one
#: place the two naming schemes meet.
TESSERACT_CODES: dict[str, str] = {
    "en": "eng", "es": "spa", "fr": "fra", "de": "deu", "pt": "por", "it": "ita", "nl": "nld",
    "ar": "ara", "hi": "hin", "ko": "kor", "ja": "jpn", "zh": "chi_sim", "ru": "rus",
    "uk": "ukr", "pl": "pol", "tr": "tur", "id": "ind", "ms": "msa", "vi": "vie", "th": "tha",
    "fa": "fas", "ur": "urd", "bn": "ben", "ta": "tam", "te": "tel", "mr": "mar", "ne": "nep",
    "he": "heb", "el": "ell", "ro": "ron", "cs": "ces", "hu": "hun", "sv": "swe", "da": "dan",
    "no": "nor", "fi": "fin", "tl": "tgl", "sw": "swa", "ca": "cat",
}
#: Packs of languages not written in the Latin script. Posts in them carry Latin text too
#: (handles, names, English words), which their pack alone reads as garbage: they read with
#: English beside them (``kor+eng``) where ``eng`` is installed (measured: docs/images.md).
NON_LATIN = frozenset({"ara", "hin", "kor", "jpn", "chi_sim", "rus", "ukr", "tha", "fas", "urd",
                       "ben", "tam", "tel", "mar", "nep", "heb", "ell"})
#: Unicode script (the first word of a letter's Unicode name) → the models that read it, best
#: first; ``Latin`` is Tesseract's script model for every Latin-script language.
SCRIPT_MODELS: dict[str, tuple[str, ...]] = {
    "LATIN": ("Latin", "eng"), "HANGUL": ("kor",), "DEVANAGARI": ("hin",), "ARABIC": ("ara",),
}
#: Masks: near-white means every channel at least ``WHITE_MIN`` and channels within
#: ``WHITE_SPREAD`` of each other; bright means a luminance of at least ``BRIGHT_MIN``.
WHITE_MIN, WHITE_SPREAD, BRIGHT_MIN = 190, 40, 170
#: A mask is read when it marks between these shares of the image.
MASK_MIN_SHARE, MASK_MAX_SHARE = 0.002, 0.5
#: A pass this confident (0..100) ends the search.
CONFIDENT = 93.0
#: Words under this confidence do not count towards the share of the image covered by text.
TEXT_SHARE_FLOOR = 50.0
#: A kept pass less confident than this, or without one word of two letters, read no text:
#: Tesseract finds "words" in the textures of a photo, at low confidence (docs/images.md).
MIN_TEXT_CONFIDENCE = 60.0
#: The routing read's scale, and the smallest longest side it reads at.
ROUTE_SCALE, ROUTE_MIN_SIDE = 0.5, 400
PASSES = ("white", "bright", "image")
#: The routing read may use at most this share of a reading's budget (the reading needs the rest).
ROUTE_BUDGET_SHARE = 0.4
#: No pass starts with less than this left of the budget: it would only be cancelled.
MIN_PASS_S = 0.2
#: A reading's budget where its caller gives none (the settings' ``ocr_budget_s`` default).
DEFAULT_BUDGET_S = 30.0


class Budget:
    """One deadline for a whole reading (routing and passes), so that no pass can take more than
    what the ones before it left; ``spent`` once a pass was cancelled or none could start."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        self.spent = False

    def left(self) -> float:
        return max(self.end - time.monotonic(), 0.0)

    def part(self, share: float) -> Budget:
        """A budget of ``share`` of what is left (the routing read's), within this one."""
        return Budget(self.left() * share)


@dataclass(frozen=True)
class _Pass:
    name: str
    text: str
    confidence: float
    #: (text, confidence, (x0, y0, x1, y1)) of each word read
    words: tuple[tuple[str, float, tuple[int, int, int, int]], ...]


def default_tessdata() -> Path:
    """Tesseract's data folder as ``tesserocr`` was built to find it."""
    import tesserocr

    return Path(tesserocr.get_languages()[0])


class Reader:
    """Reads images with the installed packs among ``languages`` (Tesseract names) and, for
    routing, the script models found in ``tessdata``. Thread-safe; one per process."""

    def __init__(self, languages: tuple[str, ...] | list[str], tessdata: Path | str | None = None) -> None:
        self.tessdata = Path(tessdata) if tessdata else default_tessdata()
        installed = {p.name.removesuffix(".traineddata")
                     for p in self.tessdata.glob("*.traineddata")}
        self.languages = tuple(lang for lang in languages if lang in installed)
        #: the models that may read: the listed packs, and the script models when installed
        self.models = frozenset(self.languages) | ({"Latin"} & installed)
        self.scripts = {script: self.with_latin(next(m for m in ms if m in self.models))
                        for script, ms in SCRIPT_MODELS.items() if any(m in self.models for m in ms)}
        self._pools: dict[str, queue.SimpleQueue[Any]] = {}
        self._lock = threading.Lock()

    # -- the models --------------------------------------------------------------------------
    def model_for(self, lang: str) -> str:
        """The pack that reads ISO 639-1 ``lang``; ``BadInput`` naming how to get it when none
        is installed and listed."""
        code = lang.lower().split("-")[0]
        pack = TESSERACT_CODES.get(code)
        if pack is None:
            raise BadInput(f"no Tesseract pack is known for the language {lang!r}: images in it "
                           "cannot be read (send the post's text, or leave out its language)")
        if pack not in self.models:
            raise BadInput(f"no Tesseract pack for {code}: install tesseract-ocr-{pack.replace('_', '-')}"
                           f" or add {pack} to FACTSIEVE_OCR_LANGUAGES")
        return self.with_latin(pack)

    def with_latin(self, pack: str) -> str:
        """The model string that reads ``pack``'s language: with English beside it for a
        language not written in the Latin script (see :data:`NON_LATIN`)."""
        return f"{pack}+eng" if pack in NON_LATIN and "eng" in self.models else pack

    def can_read(self, lang: str) -> bool:
        """Whether ISO 639-1 ``lang`` has an installed, listed pack (else :meth:`read` with it
        raises ``BadInput``; ``None`` routes by script instead)."""
        return TESSERACT_CODES.get(lang.lower().split("-")[0]) in self.models

    @property
    def route_model(self) -> str | None:
        """The combined model string the language routing reads with (``None``: one script
        model only, nothing to route between)."""
        models = list(dict.fromkeys(m.split("+")[0] for m in self.scripts.values()))
        return "+".join(models) if len(models) > 1 else None

    @contextmanager
    def _api(self, model: str) -> Iterator[Any]:
        from tesserocr import PSM, PyTessBaseAPI

        with self._lock:
            pool = self._pools.setdefault(model, queue.SimpleQueue())
        try:
            api = pool.get_nowait()
        except queue.Empty:
            try:
                api = PyTessBaseAPI(path=f"{self.tessdata}/", lang=model, psm=PSM.SINGLE_BLOCK)
            except RuntimeError as exc:
                raise BadInput(f"Tesseract cannot load {model!r} from {self.tessdata}: {exc}") from None
        try:
            yield api
        finally:
            api.Clear()
            pool.put(api)

    # -- reading -----------------------------------------------------------------------------
    def read(self, img: Any, lang: str | None = None, budget_s: float = DEFAULT_BUDGET_S) -> OcrResult:
        """The text in ``img`` (an RGB PIL image), read as ``lang`` (ISO 639-1) when given,
        else routed by script, within ``budget_s`` seconds (see the module's docstring)."""
        started = time.perf_counter()
        budget = Budget(budget_s)
        if lang:
            model = self.model_for(lang)
        else:
            # the routing read gets a share: a cancelled one routes by what it read before (else
            # to Latin), and the reading itself still has the rest
            routing = budget.part(ROUTE_BUDGET_SHARE)
            model = self.route(img, routing)
            budget.spent = routing.spent
        best = self._recipe(img, model, budget)
        if best is not None and not is_text(best):
            best = None  # texture, not text: nothing read, nothing covered
        text = best.text if best else ""
        if lang:
            found_lang: str | None = lang
        elif text:
            from plugin.lang import detect_language

            found_lang = detect_language(text)
        else:
            found_lang = None
        return OcrResult(text=text, model=model, lang=found_lang,
                         confidence=best.confidence if best else 0.0,
                         pass_name=best.name if best else "image",
                         text_share=text_share(best.words if best else (), img.size),
                         seconds=time.perf_counter() - started, budget_spent=budget.spent)

    def route(self, img: Any, budget: Budget | None = None) -> str:
        """The single-script model for ``img``'s text: the recipe read at half size with every
        script model at once; the script of most of the (confidence-weighted) letters picks.
        Text in no routable script, or none read, goes to the Latin model."""
        fallback = self.scripts.get("LATIN") or (self.languages[0] if self.languages else "eng")
        combined = self.route_model
        if combined is None:
            return fallback
        w, h = img.size
        scale = max(ROUTE_SCALE, min(1.0, ROUTE_MIN_SIDE / max(w, h)))
        small = img if scale >= 1.0 else img.resize((max(1, round(w * scale)), max(1, round(h * scale))))
        best = self._recipe(small, combined, budget or Budget(DEFAULT_BUDGET_S))
        script = dominant_script(best.words) if best else None
        return self.scripts.get(script or "", fallback)

    def _recipe(self, img: Any, model: str, budget: Budget) -> _Pass | None:
        best: _Pass | None = None
        with self._api(model) as api:
            for name in PASSES:
                page = pass_image(img, name)
                if page is None:
                    continue
                if budget.left() < MIN_PASS_S:
                    budget.spent = True
                    break
                got = _read(api, page, name, budget)
                if got is None:  # cancelled at the deadline: nothing of it counts
                    budget.spent = True
                    break
                if got.words and (best is None or got.confidence > best.confidence):
                    best = got
                if best is not None and best.confidence >= CONFIDENT:
                    break
        return best


def _read(api: Any, page: Any, name: str, budget: Budget) -> _Pass | None:
    """One pass, recognised within what is left of ``budget``; ``None`` when Tesseract was
    cancelled at that deadline. A cancelled page is not iterated: its words past the deadline
    have no result, and the text getters would recognise it again, without a deadline."""
    from tesserocr import RIL, iterate_level

    api.SetImage(page)
    allowed = budget.left()
    started = time.monotonic()
    if not api.Recognize(timeout=max(1, int(allowed * 1000))):
        if time.monotonic() - started >= allowed * 0.9:
            return None
        return _Pass(name=name, text="", confidence=0.0, words=())  # failed, not cancelled
    words = []
    iterator = api.GetIterator()
    for word in iterate_level(iterator, RIL.WORD) if iterator is not None else ():
        try:
            text = (word.GetUTF8Text(RIL.WORD) or "").strip()
        except RuntimeError:  # tesserocr's "No text returned"
            continue
        box = word.BoundingBox(RIL.WORD)
        if text and box:
            words.append((text, float(word.Confidence(RIL.WORD)), tuple(box)))
    chars = sum(len(t) for t, _, _ in words)
    confidence = sum(len(t) * c for t, c, _ in words) / chars if chars else 0.0
    lines = _text(api.GetUTF8Text).splitlines() if words else []
    text = "\n".join(line.strip() for line in lines if line.strip())
    return _Pass(name=name, text=text, confidence=confidence, words=tuple(words))


def is_text(read: _Pass) -> bool:
    """Whether a pass read text rather than texture: confident enough, with a real word."""
    return read.confidence >= MIN_TEXT_CONFIDENCE and any(
        sum(ch.isalpha() for ch in t) >= 2 for t, c, _ in read.words if c >= TEXT_SHARE_FLOOR)


def _text(get: Any) -> str:
    """What a tesserocr getter returns; it raises ``RuntimeError`` where there is no text."""
    try:
        return get() or ""
    except RuntimeError:
        return ""


def pass_image(img: Any, name: str) -> Any | None:
    """The greyscale page a pass reads (text black on white for the masks), or ``None`` when
    its mask marks no plausible text (see :data:`MASK_MIN_SHARE`, :data:`MASK_MAX_SHARE`)."""
    import numpy as np
    from PIL import Image

    if name == "image":
        return img.convert("L")
    if name == "white":
        rgb = np.asarray(img.convert("RGB"), dtype=np.int16)
        low, high = rgb.min(axis=2), rgb.max(axis=2)
        mask = (low >= WHITE_MIN) & (high - low <= WHITE_SPREAD)
    elif name == "bright":
        mask = np.asarray(img.convert("L")) >= BRIGHT_MIN
    else:
        raise ValueError(f"unknown OCR pass {name!r}; one of {', '.join(PASSES)}")
    if not MASK_MIN_SHARE <= mask.mean() <= MASK_MAX_SHARE:
        return None
    return Image.fromarray(np.where(mask, 0, 255).astype(np.uint8), "L")


def dominant_script(words: Any) -> str | None:
    """The Unicode script (``LATIN``, ``HANGUL``, …) of most letters of ``words`` ((text,
    confidence, box) triples), each letter weighted by its word's confidence."""
    counts: Counter[str] = Counter()
    for text, confidence, _ in words:
        for ch in text:
            if ch.isalpha():
                name = unicodedata.name(ch, "")
                if name:
                    counts[name.split(" ")[0]] += max(confidence, 1.0)
    return counts.most_common(1)[0][0] if counts else None


def text_share(words: Any, size: tuple[int, int]) -> float:
    """The share of an image of ``size`` covered by the union of the boxes of the words read
    with at least :data:`TEXT_SHARE_FLOOR` confidence."""
    import numpy as np

    w, h = size
    if not w or not h:
        return 0.0
    covered = np.zeros((h, w), dtype=bool)
    for _, confidence, (x0, y0, x1, y1) in words:
        if confidence >= TEXT_SHARE_FLOOR:
            covered[max(0, y0):min(h, y1), max(0, x0):min(w, x1)] = True
    return float(covered.mean())


_readers: dict[tuple[tuple[str, ...], str | None], Reader] = {}
_readers_lock = threading.Lock()


def reader(settings: Settings) -> Reader:
    """The process's reader for ``settings`` (its APIs stay loaded between images)."""
    tessdata = str(settings.ocr_tessdata_dir) if settings.ocr_tessdata_dir else None
    key = (tuple(settings.ocr_languages), tessdata)
    with _readers_lock:
        if key not in _readers:
            _readers[key] = Reader(settings.ocr_languages, tessdata)
        return _readers[key]
