"""Webhook signatures: the headers, signing and verifying, and the secrets a delivery is signed with.

Signing follows the Stripe/GitHub convention: ``X-FactSieve-Signature: sha256=<hex
HMAC-SHA256(secret, "<timestamp>.<raw body>")>`` with the Unix ``X-FactSieve-Timestamp`` inside
the MAC, so a receiver can refuse replays outside a tolerance. While a rotated secret overlaps
its predecessor the header carries one signature per valid secret, newest first and comma
separated (``sha256=<new>,sha256=<old>``); a receiver accepts the request when any of them
matches (``verify_signature``).
"""
from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

from plugin.errors import BadInput

SIGNATURE_HEADER = "X-FactSieve-Signature"
TIMESTAMP_HEADER = "X-FactSieve-Timestamp"
DELIVERY_HEADER = "X-FactSieve-Delivery"
EVENT_HEADER = "X-FactSieve-Event"


#: How long the secret a rotation replaced still signs deliveries, so receivers can switch over.
SECRET_OVERLAP_S = 24 * 3600
#: The longest overlap a rotation may ask for: two valid secrets should be a short transition.
MAX_SECRET_OVERLAP_S = 30 * 24 * 3600
#: Secret lengths, as the API's ``WebhookIn`` allows them.
SECRET_MIN_CHARS, SECRET_MAX_CHARS = 16, 256
#: Signatures a receiver looks at in one header (two during a rotation; the rest is ignored).
MAX_SIGNATURES = 8


def sign(secret: str, timestamp: int | str, body: bytes) -> str:
    mac = hmac.new(secret.encode("utf-8"), f"{timestamp}.".encode("ascii") + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def signature_header(secrets_: Iterable[str], timestamp: int | str, body: bytes) -> str:
    """One signature per valid secret, newest first, comma separated.

    A list in the one header, rather than a second header, keeps a single place to look and
    the same shape with one secret (the usual case: exactly ``sha256=<hex>``, as before); the
    ``sha256=`` prefix on each entry leaves room for another algorithm later, as Stripe's
    repeated ``v1=`` entries do."""
    return ",".join(sign(s, timestamp, body) for s in secrets_)


def verify_signature(secret: str, body: bytes, timestamp: str | None, signature: str | None, *,
                     now: float | None = None, tolerance_s: int = 300) -> bool:
    """What a receiver runs: the timestamp is recent and one of the header's signatures matches
    (constant time). Anything malformed, non-ASCII included, is not a match."""
    if not timestamp or not signature or not timestamp.isascii() or not timestamp.isdigit():
        return False
    if len(timestamp) > 15:  # no Unix time is that long; int() of 4,300+ digits even raises
        return False
    current = time.time() if now is None else now
    if abs(current - int(timestamp)) > tolerance_s:
        return False
    expected = sign(secret, timestamp, body).encode("ascii")
    matched = False
    for candidate in signature.split(",")[:MAX_SIGNATURES]:
        candidate = candidate.strip()
        if candidate.isascii():
            matched |= hmac.compare_digest(expected, candidate.encode("ascii"))
    return matched


def check_secret(secret: str) -> str:
    """A signing secret a caller chose: long enough to resist guessing. The same bounds as the
    API's ``WebhookIn``, so the store holds to them for callers that skip the API too."""
    if not SECRET_MIN_CHARS <= len(secret) <= SECRET_MAX_CHARS:
        raise BadInput(f"a webhook secret has {SECRET_MIN_CHARS} to {SECRET_MAX_CHARS} "
                       f"characters, not {len(secret)}")
    return secret


def signing_secrets(subscription: dict[str, Any], now: float) -> list[str]:
    """The secrets a delivery is signed with at ``now``: the current one, then the one a rotation
    replaced until its overlap ends."""
    out = [subscription["secret"]]
    previous = subscription.get("previous_secret")
    if previous and now < subscription.get("previous_secret_expires_at", 0):
        out.append(previous)
    return out


def rotated(subscription: dict[str, Any], new_secret: str, now: float,
            overlap_s: float) -> dict[str, Any]:
    """The subscription after a rotation to ``new_secret``: the current secret stays valid for
    ``overlap_s`` more seconds. A secret older than that is dropped, even mid-overlap: two valid
    secrets at most, so rotating twice quickly retires the oldest at once."""
    if not 0 <= overlap_s <= MAX_SECRET_OVERLAP_S:
        raise BadInput(f"a secret overlap is 0 to {MAX_SECRET_OVERLAP_S} seconds, not {overlap_s}")
    out = {k: v for k, v in subscription.items()
           if k not in ("previous_secret", "previous_secret_expires_at")}
    out["secret"] = new_secret
    out["rotated_at"] = datetime.fromtimestamp(now, timezone.utc).isoformat(timespec="milliseconds")
    if overlap_s > 0:
        out["previous_secret"] = subscription["secret"]
        out["previous_secret_expires_at"] = int(now + overlap_s)
    return out


def delivery_headers(event: str, did: str, timestamp: str, signature: str) -> dict[str, str]:
    """Request headers of one attempt. ``Accept-Encoding: identity`` asks for a body we never
    have to decompress (we would not anyway); ``Connection: close``: one connection an attempt."""
    return {"Content-Type": "application/json", "User-Agent": "FactSieve-Webhooks/1",
            "Accept-Encoding": "identity", "Connection": "close", EVENT_HEADER: event,
            DELIVERY_HEADER: did, TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: signature}
