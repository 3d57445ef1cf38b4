"""Query variants for multi-query retrieval.

A post rarely says "false"; the fact-check that debunks it almost always does. The *debunk*
variant appends the words fact-checkers use in the post's language, so BM25 and the embedding
lean towards debunking articles (REVEAL's weighted multi-query RRF gives it the highest weight).
"""
from __future__ import annotations

#: Debunking vocabulary per language (ISO 639-1); English is the fallback.
DEBUNK_WORDS: dict[str, str] = {
    "en": "false hoax fact check",
    "es": "falso bulo verificación",
    "fr": "faux intox vérification",
    "de": "falsch Falschmeldung Faktencheck",
    "pt": "falso boato checagem",
    "ar": "كاذب زائف تحقق",
    "tr": "yanlış asılsız doğrulama",
    "pl": "fałsz nieprawda weryfikacja",
    "th": "ข่าวปลอม เท็จ ตรวจสอบข้อเท็จจริง",
    "ms": "palsu tidak benar semakan fakta",
    "ko": "거짓 가짜뉴스 팩트체크",
    "hi": "फर्जी झूठा फैक्ट चेक",
    "it": "falso bufala verifica",
    "nl": "onwaar nepnieuws factcheck",
    "id": "hoaks salah cek fakta",
}


def debunk_variant(text: str, lang: str | None) -> str:
    """The post followed by debunking words in its language (English when unknown)."""
    return f"{text} {DEBUNK_WORDS.get(lang or 'en', DEBUNK_WORDS['en'])}"


#: variant name → builder(text, lang) for the variants that need no LLM
VARIANTS = {
    "post": lambda text, lang: text,
    "debunk": debunk_variant,
}
