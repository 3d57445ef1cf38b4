"""Request bodies, read in one place and only whole.

A body over its route's limit is a 413 naming the limit, whether the client sent
``Content-Length`` or ``Transfer-Encoding: chunked``. The second is the trap: for a chunked body
the WSGI server (gunicorn) sets ``wsgi.input_terminated`` and werkzeug wraps the input in a
``LimitedStream`` that *ends quietly* at ``max_content_length`` (``readall`` returns what it read;
only a further read raises), so ``request.get_data()`` handed back the first 16 MiB of a larger
upload as if it were all of it. Here a body is read up to one byte past the limit, and that byte
decides. Every route that reads a body comes through ``read_body``; nothing else touches
``request.stream``, ``get_data``, ``data``, ``json``, ``form`` or ``files``.

Parsing has limits too, and each is a client error, never a 500: more than ``MAX_FORM_FIELDS``
form fields (``parse_qsl`` raises a bare ``ValueError``) or ``MAX_FORM_PARTS`` multipart parts is a
413; JSON nested deeper than the parser's limit, or holding a lone surrogate (``"\\ud800"``, which
no store can encode), is a 400 (``parse_json``, the one JSON reader of every route).
"""
from __future__ import annotations

import io
from typing import IO, Any
from urllib.parse import parse_qsl

from flask import request
from werkzeug.datastructures import MultiDict

from plugin.errors import BadInput, ContentTooLarge, UnsupportedContentType

__all__ = ["MAX_FORM_FIELDS", "MAX_FORM_PARTS", "has_body", "parse_form", "parse_json", "read_body",
           "read_form", "read_limited", "read_multipart", "too_large"]

_CHUNK = 64 * 1024
#: the most fields one urlencoded form may have (the desk's largest, a bulk pick, is 200)
MAX_FORM_FIELDS = 10_000
#: the most parts one multipart body may have
MAX_FORM_PARTS = 1000


def too_large(limit: int, setting: str) -> ContentTooLarge:
    return ContentTooLarge(f"the request body is larger than this route's limit of {limit:,} bytes "
                           f"({setting}); nothing was read as a whole or stored")


def has_body() -> bool:
    """Whether the client sent a body (a non-zero ``Content-Length``, or a chunked one), judged
    from the headers alone: nothing is read."""
    if request.content_length:
        return True
    return "chunked" in request.headers.get("Transfer-Encoding", "").lower()


def read_limited(stream: IO[bytes], limit: int, setting: str) -> bytes:
    """All of ``stream`` when it holds at most ``limit`` bytes; otherwise ``ContentTooLarge``,
    after reading ``limit + 1`` bytes and never more (the rest stays unread)."""
    buf = bytearray()
    while len(buf) <= limit:
        chunk = stream.read(min(_CHUNK, limit + 1 - len(buf)))
        if not chunk:
            return bytes(buf)
        buf += chunk
    raise too_large(limit, setting)


def read_body(limit: int, setting: str) -> bytes:
    """The request's body, whole, when it is at most ``limit`` bytes; a 413 naming ``limit`` and
    the ``setting`` that raises it otherwise (before a byte is read, when ``Content-Length``
    already says so)."""
    length = request.content_length
    if length is not None and length > limit:
        raise too_large(limit, setting)
    # werkzeug caps a chunked body's stream at max_content_length without an error at the cap:
    # one byte more than ours lets read_limited see that the body goes on
    request.max_content_length = limit + 1
    return read_limited(request.stream, limit, setting)


def read_form(limit: int, setting: str) -> MultiDict[str, str]:
    """An HTML form's fields (``application/x-www-form-urlencoded``, what the desk's forms and
    htmx send), read through ``read_body``; an empty body is an empty form. Undecodable bytes
    become U+FFFD, so a mangled field fails validation by name instead of the whole request."""
    if has_body() and request.mimetype != "application/x-www-form-urlencoded":
        raise UnsupportedContentType(f"send the form as application/x-www-form-urlencoded, not "
                                     f"{request.mimetype or 'no content type'!r}")
    raw = read_body(limit, setting) if has_body() else b""
    return parse_form(raw)


def parse_form(raw: bytes) -> MultiDict[str, str]:
    """An urlencoded body's fields (pure). Over ``MAX_FORM_FIELDS`` is a 413 naming the limit:
    ``parse_qsl`` says so with a plain ``ValueError``, which reached the client as a 500."""
    try:
        pairs = parse_qsl(raw.decode("utf-8", errors="replace"), keep_blank_values=True,
                          max_num_fields=MAX_FORM_FIELDS)
    except ValueError:
        raise ContentTooLarge(f"the form has more than {MAX_FORM_FIELDS:,} fields; nothing was "
                              f"read") from None
    return MultiDict(pairs)


def parse_json(raw: bytes) -> Any:
    """A JSON body parsed (pure), or a 400 naming why: the one JSON reader of every route.

    pydantic-core's parser, the one models validate with: it stops at a nesting depth of 200
    (``json.loads`` raised ``RecursionError`` at ~1000 and the route answered 500), refuses a
    lone surrogate escape (``json.loads`` accepted ``"\\ud800"``, which the store then could not
    encode: another 500) and ``NaN``/``Infinity``, which are not JSON."""
    from pydantic_core import from_json

    try:
        return from_json(raw, allow_inf_nan=False)
    except ValueError as exc:
        raise BadInput(f"the body is not valid JSON: {str(exc)[:200]}") from None


def read_multipart(limit: int, setting: str) -> tuple[MultiDict[str, str], dict[str, list[bytes]]]:
    """A ``multipart/form-data`` body's text fields and its file parts' bytes by field name
    (every part of a repeated name, in order: the caller decides whether a name may repeat),
    read whole through ``read_body`` and parsed from memory (a request's own ``form`` and
    ``files`` are never touched). Undecodable field bytes become U+FFFD."""
    from werkzeug.formparser import FormDataParser

    raw = read_body(limit, setting)
    if "boundary" not in request.mimetype_params:
        raise UnsupportedContentType("a multipart/form-data body needs its boundary parameter")
    parser = FormDataParser(max_content_length=limit + 1, max_form_parts=MAX_FORM_PARTS)
    _, form, files = parser.parse(io.BytesIO(raw), "multipart/form-data", len(raw),
                                  dict(request.mimetype_params))
    parts: dict[str, list[bytes]] = {}
    for name, part in files.items(multi=True):
        try:
            parts.setdefault(name, []).append(part.read())
        finally:
            part.close()
    return form, parts
