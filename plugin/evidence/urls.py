"""URL keys for excluding a claim's own fact-check article from its evidence (pure).

The article a claim names and the page a knowledge store holds are often spelled differently:
AVeriTeC gives ``fact_checking_article`` as a Wayback Machine URL
(``https://web.archive.org/web/20201130144023/https://checkyourfact.com/…``) while a scraped store
has the live page, with or without ``www.``, a trailing slash or a fragment. Both sides are
reduced to the same key, and the domain is taken from the page inside an archive wrapper (an
archived fact-check is still the fact-checker's page, not web.archive.org's).
"""
from __future__ import annotations

import re
from urllib.parse import urlsplit

#: ``web.archive.org/web/<timestamp><flags>/<original URL>`` (flags such as ``id_`` or ``if_``).
_WAYBACK = re.compile(r"^(?:https?://)?(?:www\.)?web\.archive\.org/web/\d+[a-z_]*/(.+)$", re.IGNORECASE)


def unwrap(url: str) -> str:
    """The original URL inside a Wayback Machine URL (repeatedly), else ``url`` itself."""
    url = url.strip()
    while m := _WAYBACK.match(url):
        url = m.group(1)
    return url if "://" in url else f"http://{url}"


def _host(url: str) -> str:
    host = (urlsplit(url).hostname or "").lower().rstrip(".")
    return host[4:] if host.startswith("www.") else host


def url_key(url: str) -> str:
    """``host/path?query`` of the unwrapped URL: no scheme, ``www.``, fragment or trailing
    slash; the host lower-cased, the path as given (paths are case-sensitive)."""
    original = unwrap(url)
    parts = urlsplit(original)
    path = parts.path.rstrip("/")
    return f"{_host(original)}{path}" + (f"?{parts.query}" if parts.query else "")


def domain_of(url: str) -> str | None:
    """The host of the unwrapped URL without ``www.``; ``None`` when it has none."""
    return _host(unwrap(url)) or None


def domain_key(domain: str) -> str:
    """A domain as callers give it ("WWW.Snopes.com", "snopes.com/", a whole URL) as stored."""
    text = domain.strip()
    return domain_of(text) or text.lower()


def parent_domains(domain: str | None) -> list[str]:
    """The domain and every parent with at least two labels: ``news.bbc.co.uk`` →
    ``[news.bbc.co.uk, bbc.co.uk, co.uk]``, so that excluding ``bbc.co.uk`` excludes its
    subdomains too (a public suffix such as ``co.uk`` is kept: nobody excludes one by accident)."""
    if not domain:
        return []
    labels = domain.split(".")
    return [".".join(labels[i:]) for i in range(max(1, len(labels) - 1))]
