"""Backend URLs without their credentials (pure): what may be shown and logged of a URL, and the
credentials to send apart from it. Used by every client of a backend (OpenSearch, Redis, the LLM)."""
from __future__ import annotations

from urllib.parse import unquote, urlsplit, urlunsplit


def redact_url(url: str) -> str:
    """``redis://:secret@host:6379/0`` → ``redis://host:6379/0``: URLs are logged and shown, the
    credentials in them never are."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``http://user:pw@host:8089/v1`` → ``("http://host:8089/v1", ("user", "pw"))``: the URL a
    client may keep, show and log, and the credentials to send as basic auth instead (pure).
    Path and query stay; a URL without credentials comes back as it is, with ``None``."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    netloc = parts.netloc.rpartition("@")[2]
    return (urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)),
            (unquote(parts.username or ""), unquote(parts.password or "")))
