"""A fact-check's image at ingest: where its bytes come from, and the image stage over them.

A record gives its image as ``image_base64`` (the bytes, or a ``data:`` URL), ``image_path``
(a local file: only the CLI's ``factsieve ingest`` reads those, never a record sent to the
HTTP API) or ``image_url`` (fetched through the guarded outbound client,
``plugin.image.fetch``); the first of these a record gives is read. ``image_step`` builds the
callable ``plugin.ingest.pipeline.ingest`` takes, so that the pipeline imports nothing of the
image stage (PIL, Tesseract) until a record has an image.

What a record's image cannot be (unreadable, too large, not a raster image, a URL refused or
failing) is a ``BadInput`` naming the problem: the pipeline rejects that record with it and
goes on.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from plugin.errors import BadInput
from plugin.image.inputs import decode_base64, read_image_file
from plugin.models import FactCheck
from plugin.settings import Settings

if TYPE_CHECKING:
    from plugin.image.model import ImageAnalysis

#: What ``ingest`` takes: a fact-check with an image → what the image stage read from it.
ImageStep = Callable[[FactCheck], "ImageAnalysis"]


def image_bytes(fc: FactCheck, settings: Settings, *, local_files: bool,
                fetch: Callable[[str, Settings], bytes] | None = None) -> bytes | None:
    """The bytes of ``fc``'s image (``None`` when it has none); ``local_files``: whether an
    ``image_path`` may be read (the CLI), else it is refused."""
    limit = settings.image_max_bytes
    if fc.image_base64:
        return decode_base64(fc.image_base64, limit, "image_base64")
    if fc.image_path:
        if not local_files:
            raise BadInput("image_path names a local file, which only the CLI's `factsieve ingest` "
                           "reads; send the image as image_base64 or image_url")
        return read_image_file(fc.image_path, limit, "image_path")
    if fc.image_url:
        if fetch is None:
            from plugin.image.fetch import fetch_image as fetch
        return fetch(fc.image_url, settings)
    return None


def image_step(settings: Settings, *, local_files: bool = False,
               fetch: Callable[[str, Settings], bytes] | None = None) -> ImageStep:
    """The image step of an ingest: ``fc``'s image bytes through the image stage (its hash
    and text; no query hashes, which only posts need), in the fact-check's language."""

    def step(fc: FactCheck) -> ImageAnalysis:
        data = image_bytes(fc, settings, local_files=local_files, fetch=fetch)
        if data is None:
            raise BadInput("the record has no image")
        from plugin.image.stage import analyse

        return analyse(data, settings, lang=fc.lang, query=False)

    return step
