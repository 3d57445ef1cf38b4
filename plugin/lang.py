"""Language detection for incoming posts and fact-checks without a language.

langdetect samples n-grams at random, so the same text can come out differently from run to run;
every call here reseeds its own detector, which makes the answer a function of the text and seed.
langdetect's profiles take a noticeable moment to load, so they load on first use, once.
"""
from __future__ import annotations

import threading
from typing import Any

__all__ = ["SUPPORTED_ANALYZER_LANGS", "detect_language"]

#: Languages with a language-specific analyzer in the fact-check index (ISO 639-1); others use
#: the language-neutral field.
SUPPORTED_ANALYZER_LANGS = ("en", "es", "fr", "de", "pt", "ar", "tr", "pl", "th", "ms", "ko", "hi")

#: langdetect codes that are not plain ISO 639-1.
_CODE_MAP = {"zh-cn": "zh", "zh-tw": "zh"}

_lock = threading.Lock()
_factory: Any = None


def _get_factory() -> Any:
    """Our own ``DetectorFactory`` (not langdetect's global one), built once under a lock."""
    global _factory
    if _factory is None:
        with _lock:
            if _factory is None:
                from langdetect.detector_factory import PROFILES_DIRECTORY, DetectorFactory

                factory = DetectorFactory()
                factory.load_profile(PROFILES_DIRECTORY)
                factory.seed = 0
                _factory = factory
    return _factory


def detect_language(text: str, *, seed: int = 0) -> str | None:
    """The ISO 639-1 code of ``text``'s language, or ``None`` when there is nothing to detect.

    Deterministic for a given ``seed``. Short texts are guessed all the same (langdetect's
    known weakness); callers that know the language should pass it instead.
    """
    if not text or not text.strip():
        return None
    from langdetect.lang_detect_exception import LangDetectException

    detector = _get_factory().create()
    # Detector.__init__ seeds its Random from factory.seed; reseeding the detector instead of
    # the shared factory keeps concurrent calls with different seeds independent.
    detector.seed = seed
    detector.random.seed(seed)
    detector.append(text)
    try:
        code = detector.detect()
    except LangDetectException:
        return None
    if not code or code == "unknown":
        return None
    return _CODE_MAP.get(code, code)
