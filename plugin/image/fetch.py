"""Fetching an ``image_url``: one GET through the guarded outbound client, the same address
rules as webhooks (``plugin.net.outbound``) and the same transport.

- where: http(s) only; loopback, private and link-local addresses refused unless their origin
  is in ``image_allowed_hosts``; FactSieve's own OpenSearch, Redis and LLM server refused
  always; the host resolved once and exactly the checked address connected to;
- how long: one deadline, ``image_fetch_timeout_s``, for the lookup, connecting and reading;
- how much: at most ``image_max_bytes`` of body (more: ``ContentTooLarge``);
- what: a 2xx answer (no redirect is followed: a 3xx is refused), whose Content-Type is
  ``image/*`` and not SVG (``UnsupportedContentType``). The bytes are still only trusted once
  ``plugin.image.decode`` has read them.

Every refusal is a ``BadInput`` (or its 413/415 kin) naming the image_url and the rule it
breaks, and nothing the server learnt from the network: not the addresses its host resolved
to, not whether it resolved at all (an internal name that resolves to a private address and
one that resolves to nothing get the same answer, ``REFUSED``), not a redirect's target, not
the operating system's words for a failed connection (issue 35). The server log has them.
"""
from __future__ import annotations

import time

from plugin.errors import BadInput, ContentTooLarge, UnsupportedContentType
from plugin.net.outbound import (IMAGE, DeliveryError, Target, backends_of, check_target,
                                     origin_of, request, resolve_host, resolve_within)
from plugin.settings import Settings

#: What the request says it takes: the raster formats ``plugin.image.decode`` reads.
ACCEPT = "image/jpeg, image/png, image/webp, image/gif, image/bmp;q=0.9"


#: The one refusal of an address (its host unresolvable, resolving to loopback, private or
#: link-local addresses outside the allow-list, or to FactSieve's own services): the rule only.
REFUSED = ("images are fetched only from hosts that resolve to public addresses, or from an "
           "origin allowed in FACTSIEVE_IMAGE_ALLOWED_HOSTS, and never from FactSieve's own "
           "services (OpenSearch, Redis, the LLM server): images are not fetched from there")
#: What a failed fetch says, by the transport's kind of failure (``DeliveryError``'s prefix).
_FAILED = {"Timeout": "Timeout: no complete answer within the {s:g} s deadline "
                      "(FACTSIEVE_IMAGE_FETCH_TIMEOUT_S)",
           "ConnectionError": "ConnectionError: cannot connect to its host",
           "SSLError": "SSLError: the TLS handshake or certificate check failed",
           "ProtocolError": "ProtocolError: the answer is not valid HTTP"}


def check_image_url(url: str, settings: Settings, deadline_s: float | None = None) -> Target:
    """Where ``url`` may be fetched from (the address rules: see the module's docstring), its
    host resolved once within ``deadline_s`` (``image_fetch_timeout_s``); ``BadInput`` naming
    the rule broken. The API runs it before it accepts a post (``inputs.check_input``)."""
    deadline_s = settings.image_fetch_timeout_s if deadline_s is None else deadline_s
    origin_of(url, IMAGE)  # a malformed URL is refused as such: its text is the client's own
    try:
        return check_target(
            url, settings.image_allowed_hosts,
            lambda host: resolve_within(lambda h: resolve_host(h, IMAGE), host, deadline_s, IMAGE),
            backends_of(settings.backend_urls), IMAGE)
    except BadInput:  # check_target logged the addresses; the client learns the rule only
        raise BadInput(f"image_url {url!r} is refused: {REFUSED}") from None


def fetch_image(url: str, settings: Settings) -> bytes:
    """The body of ``url`` if it is an image FactSieve may fetch, else the error saying why."""
    start = time.monotonic()
    deadline_s = settings.image_fetch_timeout_s
    target = check_image_url(url, settings, deadline_s)
    left = max(deadline_s - (time.monotonic() - start), 0.001)
    try:
        reply = request("GET", target, None, {"Accept": ACCEPT, "Accept-Encoding": "identity",
                                              "User-Agent": "FactSieve image fetch"},
                        deadline_s=left, max_body=settings.image_max_bytes + 1)
    except DeliveryError as exc:
        kind = exc.detail.split(":", 1)[0]
        said = _FAILED.get(kind, "the fetch failed").format(s=deadline_s)
        raise BadInput(f"image_url {url!r} could not be fetched: {said}") from None
    if 300 <= reply.status < 400:
        raise BadInput(f"image_url {url!r} answered with a redirect (HTTP {reply.status}); "
                       "redirects are not followed: send the image's own URL")
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
