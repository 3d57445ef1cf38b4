"""The image stage: image bytes → ``ImageAnalysis`` (the composition of decode, PDQ and OCR)."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

from plugin.image.model import ImageAnalysis

if TYPE_CHECKING:
    from plugin.image.ocr import Reader
    from plugin.settings import Settings


def analyse(data: bytes, settings: Settings, *, lang: str | None = None, query: bool = True,
            ocr: bool = True, reader: Reader | None = None,
            ocr_budget_s: float | None = None) -> ImageAnalysis:
    """Decode ``data`` (checked against ``image_max_bytes`` / ``image_max_pixels``), hash it,
    and read its text.

    ``lang`` (ISO 639-1) is the text's language when known; ``None``, or a language without a
    Tesseract pack here (``Reader.can_read``), routes by script: a post in a language the
    deployment reads no pack for is still read, never refused.
    ``query``: also compute the hashes a query compares (8 orientations, bars stripped); a
    stored fact-check's image needs its own hash only. ``ocr=False`` skips reading (no text, not
    text-heavy). ``reader`` defaults to the process's one for ``settings``. ``ocr_budget_s``:
    the reading's time budget (``Reader.read``), unless given ``settings.ocr_budget_s`` but at
    most half of ``task_time_limit_s``, so that a job's reading ends before its task is killed
    (the synchronous API gives ``ocr_api_budget_s``). A hash below
    ``pdq_min_quality`` is dropped (``pdq`` ``None``, no query hashes): flat images hash alike.
    Raises what :func:`plugin.image.decode.decode` and :meth:`Reader.read` raise."""
    from plugin.image import pdq as pdq_mod
    from plugin.image.decode import decode
    from plugin.image.thumb import thumbnail

    timings: dict[str, float] = {}
    started = time.perf_counter()
    decoded = decode(data, max_bytes=settings.image_max_bytes, max_pixels=settings.image_max_pixels)
    timings["decode_ms"] = (time.perf_counter() - started) * 1000

    started = time.perf_counter()
    min_quality = settings.pdq_min_quality
    if query:
        own, query_hashes = pdq_mod.hashes(decoded.image, min_quality=min_quality)
    else:
        own, query_hashes = pdq_mod.hash_image(decoded.image), ()
    pdq = own if own.quality >= min_quality else None
    timings["hash_ms"] = (time.perf_counter() - started) * 1000

    read = None
    if ocr:
        started = time.perf_counter()
        if reader is None:
            from plugin.image.ocr import reader as process_reader

            reader = process_reader(settings)
        budget_s = (min(settings.ocr_budget_s, settings.task_time_limit_s / 2)
                    if ocr_budget_s is None else ocr_budget_s)
        read = reader.read(decoded.image, lang if lang and reader.can_read(lang) else None,
                           budget_s=budget_s)
        timings["ocr_ms"] = (time.perf_counter() - started) * 1000

    return ImageAnalysis(
        sha256=decoded.sha256, width=decoded.width, height=decoded.height, format=decoded.format,
        pdq=pdq, query_hashes=query_hashes if pdq is not None else (), ocr=read,
        text_heavy=read is not None and read.text_share >= settings.image_text_heavy_share,
        timings_ms=timings, thumbnail=thumbnail(decoded.image) if query else None)
