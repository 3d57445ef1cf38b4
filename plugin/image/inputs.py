"""A post's image as a request gives it: ``image`` (base64, standard or URL-safe, with or without
a ``data:`` URL prefix) or ``image_url`` (fetched through the guarded outbound client), read the
same way for ``/v1/match``, ``/v1/posts`` (in the worker), ``/v1/verify`` and the CLI. The one
place that says how an image may be given, and how large a JSON body carrying one may be.
"""
from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plugin.errors import BadInput, ContentTooLarge, InvalidRequest, UnsupportedContentType

if TYPE_CHECKING:
    from plugin.image.model import ImageAnalysis
    from plugin.image.ocr import Reader
    from plugin.settings import Settings

#: ``data:image/png;base64,`` and the like, before the base64 itself
_DATA_URL = re.compile(r"^data:[\w.+-]+/[\w.+-]+(?:;[\w.+-]+=[\w.+-]+)*;base64,", re.IGNORECASE)
_SPACE = re.compile(r"\s+")
#: what a JSON body holds besides the image (its other fields, the data URL prefix, escaping)
IMAGE_BODY_MARGIN = 64 * 1024


def image_body_bytes(settings: Settings) -> int:
    """The largest JSON (or multipart) body of a route that takes an image: the JSON limit plus
    an image of ``image_max_bytes`` in base64."""
    return settings.max_json_bytes + 4 * -(-settings.image_max_bytes // 3) + IMAGE_BODY_MARGIN


def given(data: Mapping[str, Any]) -> bool:
    """Whether ``data`` gives an image (``image`` or ``image_url``)."""
    return bool(data.get("image") or data.get("image_url"))


def check_one(data: Mapping[str, Any]) -> None:
    """``BadInput`` when ``data`` gives both an image and an image URL."""
    if data.get("image") and data.get("image_url"):
        raise BadInput("give either image (the bytes, base64) or image_url, not both")


def decode_base64(value: str, max_bytes: int, field: str = "image") -> bytes:
    """The bytes of a base64 image (standard or URL-safe alphabet, padding optional, white space
    ignored, a ``data:`` URL prefix allowed), whoever gives it (a post's ``image``, a fact-check's
    ``image_base64``: ``field`` names it in messages); ``ContentTooLarge`` over ``max_bytes``
    (judged before decoding), ``BadInput`` when it is not base64."""
    if not isinstance(value, str):
        raise BadInput(f"{field} must be a base64 string")
    text = _SPACE.sub("", _DATA_URL.sub("", value.strip(), count=1))
    too_large = ContentTooLarge(f"{field} is larger than {max_bytes:,} bytes (FACTSIEVE_IMAGE_MAX_BYTES)")
    if 3 * (len(text) // 4) > max_bytes + 3:
        raise too_large
    text = text.replace("-", "+").replace("_", "/").rstrip("=")
    try:
        data = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise BadInput(f"{field} is not valid base64 (standard or URL-safe, optionally a data: URL)") from None
    if not data:
        raise BadInput(f"{field} is empty")
    if len(data) > max_bytes:
        raise too_large
    return data


def read_image_file(path: Path | str, max_bytes: int, field: str = "image") -> bytes:
    """A local image file's bytes (the CLI's ``--image``, ingest's ``image_path``: ``field``
    names it in messages): ``ContentTooLarge`` over ``max_bytes`` (never reading more than one
    byte past it), ``BadInput`` naming a file that cannot be read."""
    file = Path(path).expanduser()
    try:
        if not file.is_file():
            raise BadInput(f"cannot read the {field} {str(path)!r}: it "
                           + ("is not a file" if file.exists() else "does not exist"))
        with file.open("rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise BadInput(f"cannot read the {field} {str(path)!r}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise ContentTooLarge(f"the {field} {str(path)!r} is larger than {max_bytes:,} bytes "
                              f"(FACTSIEVE_IMAGE_MAX_BYTES)")
    return data


def check_input(data: Mapping[str, Any], settings: Settings) -> bytes | None:
    """The cheap checks of the image ``data`` gives, with no pixel decoded and nothing fetched:
    one of ``image`` or ``image_url``; an ``image``'s base64, size, format (sniffed) and
    dimensions (its header); an ``image_url``'s address rules (its host resolved once). The
    same for every route: ``/v1/match`` and ``/v1/verify`` before they read the image, and
    ``/v1/posts`` before it accepts a post for a worker to read (a post refused later would
    keep its id). Returns an ``image``'s bytes (``None`` for an ``image_url``, or none)."""
    from plugin.image.decode import check

    check_one(data)
    if data.get("image"):
        with about("image"):
            raw = decode_base64(data["image"], settings.image_max_bytes)
            check(raw, max_bytes=settings.image_max_bytes, max_pixels=settings.image_max_pixels)
        return raw
    if data.get("image_url"):
        from plugin.image.fetch import check_image_url

        with about("image_url"):
            check_image_url(str(data["image_url"]), settings)
    return None


def image_bytes(data: Mapping[str, Any], settings: Settings) -> bytes | None:
    """The image ``data`` gives, as bytes (``image_url`` fetched now, through the same address
    rules as :func:`check_input`); ``None`` when it gives none."""
    if data.get("image_url") and not data.get("image"):
        from plugin.image.fetch import fetch_image

        with about("image_url"):
            return fetch_image(str(data["image_url"]), settings)
    return check_input(data, settings)


def analyse_input(data: Mapping[str, Any], settings: Settings, *, reader: Reader | None = None,
                  ocr_budget_s: float | None = None) -> ImageAnalysis | None:
    """The image ``data`` gives, read by the image stage (query hashes and OCR, in the
    language ``data["lang"]`` when given, within ``ocr_budget_s``: see ``stage.analyse``);
    ``None`` when it gives none."""
    raw = image_bytes(data, settings)
    if raw is None:
        return None
    from plugin.image.stage import analyse

    with about("image_url" if data.get("image_url") else "image"):
        return analyse(raw, settings, lang=data.get("lang") or None, reader=reader,
                       ocr_budget_s=ocr_budget_s)


@contextmanager
def about(field: str) -> Iterator[None]:
    """An image the client gave that cannot be read is its request's fault, field by field: a
    422 naming ``field`` (too large stays 413, an unsupported type 415)."""
    try:
        yield
    except (ContentTooLarge, UnsupportedContentType, InvalidRequest):
        raise
    except BadInput as exc:
        raise InvalidRequest(exc.detail, errors=[{"field": field, "message": exc.detail,
                                                  "type": "image_invalid"}]) from None
