"""Fetching an ``image_url``: one GET through the guarded outbound client, the same address
rules as webhooks (``plugin.service.outbound``) and the same transport.

- where: http(s) only; loopback, private and link-local addresses refused unless their origin
  is in ``image_allowed_hosts``; FactSieve's own OpenSearch, Redis and LLM server refused
  always; the host resolved once and exactly the checked address connected to;
- how long: one deadline, ``image_fetch_timeout_s``, for the lookup, connecting and reading;
- how much: at most ``image_max_bytes`` of body (more: ``ContentTooLarge``);
- what: a 2xx answer (no redirect is followed: a 3xx is refused, naming where it pointed), whose
  Content-Type is ``image/*`` and not SVG (``UnsupportedContentType``). The bytes are still
  only trusted once ``plugin.image.decode`` has read them.

Every refusal is a ``BadInput`` (or its 413/415 kin) naming the image_url, never the addresses
its host resolved to.
"""
from __future__ import annotations

import time

from plugin.errors import BadInput, ContentTooLarge, UnsupportedContentType
from plugin.service.outbound import (IMAGE, DeliveryError, backends_of, check_target, request,
                                     resolve_host, resolve_within)
from plugin.settings import Settings

#: What the request says it takes: the raster formats ``plugin.image.decode`` reads.
ACCEPT = "image/jpeg, image/png, image/webp, image/gif, image/bmp;q=0.9"


def fetch_image(url: str, settings: Settings) -> bytes:
    """The body of ``url`` if it is an image FactSieve may fetch, else the error saying why."""
    start = time.monotonic()
    deadline_s = settings.image_fetch_timeout_s
    target = check_target(
        url, settings.image_allowed_hosts,
        lambda host: resolve_within(lambda h: resolve_host(h, IMAGE), host, deadline_s, IMAGE),
        backends_of(settings.backend_urls), IMAGE)
    left = max(deadline_s - (time.monotonic() - start), 0.001)
    try:
        reply = request("GET", target, None, {"Accept": ACCEPT, "Accept-Encoding": "identity",
                                              "User-Agent": "FactSieve image fetch"},
                        deadline_s=left, max_body=settings.image_max_bytes + 1)
    except DeliveryError as exc:
        raise BadInput(f"image_url {url!r} could not be fetched: {exc.detail}") from None
    if 300 <= reply.status < 400:
        where = reply.headers.get("location")
        raise BadInput(f"image_url {url!r} answered with a redirect (HTTP {reply.status}"
                       + (f" to {where[:200]!r}" if where else "")
                       + "); redirects are not followed: send the image's own URL")
    if not 200 <= reply.status < 300:
        raise BadInput(f"image_url {url!r} answered HTTP {reply.status}, not the image")
    kind = reply.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if not kind.startswith("image/") or "svg" in kind:
        raise UnsupportedContentType(f"image_url {url!r} is {kind or 'of no content type'}, not a "
                                     "raster image (JPEG, PNG, WebP, GIF, BMP)")
    if len(reply.body) > settings.image_max_bytes:
        raise ContentTooLarge(f"image_url {url!r} is larger than {settings.image_max_bytes} bytes "
                              "(FACTSIEVE_IMAGE_MAX_BYTES)")
    if not reply.complete:
        raise BadInput(f"image_url {url!r}: its body could not be read whole")
    return reply.body
