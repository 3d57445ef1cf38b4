"""Outbound HTTP to servers we do not trust (webhook receivers, the hosts of image URLs):
which addresses may be reached, then one request to exactly the address that was checked.

Pure address rules (``is_public_address``, ``parse_origin``, ``check_target``; a ``Purpose``
says how their messages name what is checked), then webhooks' ``post`` on the shared
transport (``plugin.net.transport.request``: one deadline, a bounded answer, the checked
address connected to while the URL's host is the Host header, TLS name and certificate's).
"""
from __future__ import annotations


import ipaddress
import logging
import socket
import ssl
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from urllib.parse import SplitResult, quote, urlsplit

from plugin.errors import BadInput
from plugin.net.transport import (MAX_RESPONSE_BYTES, MAX_RESPONSE_HEAD_BYTES,  # noqa: F401
                                  Deadline, DeliveryError, Reply, Target, default_tls_context, request)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Purpose:
    """What a checked URL is for, as messages and logs name it: a webhook receiver (``WEBHOOK``,
    the default everywhere) or an image to fetch (``IMAGE``). The rules are the same."""

    what: str = "webhook"
    url: str = "webhook URL"
    setting: str = "FACTSIEVE_WEBHOOK_ALLOWED_HOSTS"
    per: str = "one per receiver"
    allow_to: str = "to send there"
    refused: str = "webhooks may not be sent there"
    credentials: str = "; the signature authenticates deliveries"


WEBHOOK = Purpose()
IMAGE = Purpose("image", "image_url", "FACTSIEVE_IMAGE_ALLOWED_HOSTS", "one per image server",
                "to fetch from there", "images are not fetched from there", "")


class Unresolvable(BadInput):
    """The webhook (or image) host does not resolve. A ``BadInput`` when a subscription is
    created; during a delivery it is a failed attempt that is retried, since DNS outages pass."""


#: IPv6 prefixes whose last 32 bits are an IPv4 address the packet is translated to: the
#: address is as public as that IPv4 address, whatever the IPv6 prefix looks like.
_TRANSLATED_V4 = tuple(ipaddress.ip_network(n) for n in (
    "::ffff:0:0/96",     # IPv4-mapped
    "::ffff:0:0:0/96",   # IPv4-translated (SIIT)
    "::/96",             # IPv4-compatible (deprecated; :: and ::1 fall in it too)
    "64:ff9b::/96",      # NAT64 well-known prefix
))
#: NAT64 local-use prefix: where the IPv4 address sits depends on the operator's prefix length,
#: so nothing outside can judge it.
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")


def embedded_ipv4(ip: ipaddress.IPv6Address) -> tuple[bool, list[ipaddress.IPv4Address]]:
    """IPv4 addresses that traffic to ``ip`` may reach, and whether ``ip`` is a mere translation
    of them (``True``: judge them alone) rather than a tunnelled IPv6 address (6to4, Teredo:
    judge the IPv6 address and them)."""
    for net in _TRANSLATED_V4:
        if ip in net:
            return True, [ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)]
    if ip.sixtofour is not None:
        return False, [ip.sixtofour]
    if ip.teredo is not None:
        return False, list(ip.teredo)
    return False, []


def _globally_routable(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return ip.is_global and not ip.is_multicast


def is_public_address(address: str) -> bool:
    """True for globally routable unicast addresses. IPv6 forms that embed an IPv4 address
    (mapped, compatible, NAT64, 6to4, Teredo) are public only if that IPv4 address is, since a
    connection to them ends up there: ``64:ff9b::7f00:1`` is 127.0.0.1 behind a NAT64."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv4Address):
        return _globally_routable(ip)
    if ip in _NAT64_LOCAL:
        return False
    translated, inner = embedded_ipv4(ip)
    if not translated and not _globally_routable(ip):
        return False
    return all(_globally_routable(v4) for v4 in inner)


def resolve_host(host: str, purpose: Purpose = WEBHOOK) -> list[str]:
    """The host's addresses in ``getaddrinfo``'s order (the system's preference), deduplicated."""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise Unresolvable(f"{purpose.what} host {host!r} does not resolve: {exc}") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


#: where host lookups with a deadline run: ``getaddrinfo`` has no timeout of its own, so a
#: lookup that hangs is abandoned at the deadline (its thread finishes when the resolver gives
#: up); four at most, so hanging lookups cannot pile up threads
_LOOKUPS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="factsieve-dns")


def resolve_within(resolve: Callable[[str], list[str]], host: str, timeout_s: float,
                   purpose: Purpose = WEBHOOK) -> list[str]:
    """``resolve(host)``, or ``Unresolvable`` once ``timeout_s`` has passed: the lookup is part
    of a delivery attempt's deadline."""
    future = _LOOKUPS.submit(resolve, host)
    try:
        return future.result(timeout=max(timeout_s, 0.0))
    except FutureTimeout:
        raise Unresolvable(f"{purpose.what} host {host!r} did not resolve within {timeout_s:g} s") from None


#: The port a URL means when it names none.
DEFAULT_PORTS = {"http": 80, "https": 443}


def _port(parts: SplitResult, url: str, purpose: Purpose) -> int | None:
    """The URL's explicit port, or None. Only ASCII digits from 1 to 65535: port 0 is not "the
    default" (``port or 80`` sent it there), and ``urlsplit`` accepted ``+80`` or `` 80`` before
    Python 3.11.4, so the text is judged here rather than by whichever Python runs."""
    hostport = parts.netloc.rpartition("@")[2]
    text = hostport.partition("]")[2] if hostport.startswith("[") else hostport
    if ":" not in text:
        return None
    raw = text.partition(":")[2]
    if raw == "":
        return None  # "host:" is the default port (RFC 3986, section 3.2.3)
    if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= 65535:
        raise BadInput(f"{purpose.url} {url!r} has port {raw!r}; a port is a number from 1 to 65535")
    return int(raw)


def _parse(url: str, purpose: Purpose = WEBHOOK) -> tuple[str, str, int, str]:
    """``(scheme, host, port, path)`` of a webhook URL (or image_url), or ``BadInput`` saying
    what is wrong."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - urlsplit's own checks (brackets, range) on the netloc
    except ValueError as exc:
        raise BadInput(f"{purpose.url} {url!r} is malformed: {exc}") from None
    if parts.scheme not in DEFAULT_PORTS:
        raise BadInput(f"{purpose.url} {url!r} must be http or https")
    if not parts.hostname:
        raise BadInput(f"{purpose.url} {url!r} has no host")
    if parts.username is not None or parts.password is not None:
        raise BadInput(f"{purpose.url} for host {parts.hostname!r} must not carry credentials"
                       f"{purpose.credentials}")
    port = _port(parts, url, purpose)
    host = parts.hostname.lower().rstrip(".")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise BadInput(f"{purpose.url} {url!r} has a malformed host: {exc}") from None
    # what requests did: keep reserved characters and existing escapes, encode the rest
    path = quote(parts.path or "/", safe="/%:@!$&'()*+,;=-._~")
    if parts.query:
        path += "?" + quote(parts.query, safe="/%:@!$&'()*+,;=-._~?")
    return parts.scheme, host, DEFAULT_PORTS[parts.scheme] if port is None else port, path


@dataclass(frozen=True)
class Origin:
    """Where a webhook may go although its host is not public: a scheme, a host and a port, all
    three compared exactly (RFC 6454's origin), so allowing a receiver never opens the other
    services on its host."""

    scheme: str
    host: str           # as ``_parse`` normalises it
    port: int           # explicit, or the scheme's default

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


def origin_of(url: str, purpose: Purpose = WEBHOOK) -> Origin:
    scheme, host, port, _ = _parse(url, purpose)
    return Origin(scheme, host, port)


def parse_origin(entry: str | Origin, purpose: Purpose = WEBHOOK) -> Origin:
    """An entry of ``FACTSIEVE_WEBHOOK_ALLOWED_HOSTS``: ``scheme://host[:port]`` (the port
    defaults to the scheme's), else ``BadInput`` saying how to write it. A bare host once
    allowed every port and path on it; it is refused, not widened to an origin by guessing."""
    if isinstance(entry, Origin):
        return entry
    text = entry.strip()
    if "://" not in text:
        host = text or "hooks.internal"
        example = f"http://{host}" if host.count(":") == 1 else f"http://{host}:8080"
        raise BadInput(f"{purpose.what} allow-list entry {entry!r} is not an origin: write "
                       f"scheme://host:port, e.g. {example}, {purpose.per} ({purpose.setting})")
    try:
        origin = origin_of(text, purpose)
    except BadInput as exc:
        raise BadInput(f"{purpose.what} allow-list entry {entry!r}: {exc.detail}") from None
    parts = urlsplit(text)
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise BadInput(f"{purpose.what} allow-list entry {entry!r} has a path or query; an entry is "
                       f"only scheme://host:port ({origin})")
    return origin


def parse_origins(entries: Iterable[str | Origin], purpose: Purpose = WEBHOOK) -> frozenset[Origin]:
    return frozenset(parse_origin(e, purpose) for e in entries)


@dataclass(frozen=True)
class Backend:
    """One of FactSieve's own services (an OpenSearch node, Redis, the LLM server): webhooks may
    never reach it, whatever the allow-list says, since a signed POST into it is a write."""

    what: str
    host: str
    port: int


def backends_of(services: Iterable[tuple[str, str, int]]) -> tuple[Backend, ...]:
    """``Backend``s of ``(what, url, default port)`` triples (``Settings.backend_urls``); a URL
    without a scheme is read as ``host:port`` (opensearch-py allows it), one without a host (a
    Unix socket) is skipped: no webhook reaches it."""
    out = []
    for what, url, default_port in services:
        parts = urlsplit(url if "://" in url else "//" + url)
        try:
            port = parts.port
        except ValueError:
            continue  # the client cannot use it either
        if parts.hostname:
            out.append(Backend(what, parts.hostname.lower().rstrip("."),
                               default_port if port is None else port))
    return tuple(dict.fromkeys(out))


def _literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None


def _where(address: str) -> str:
    """What a connection to ``address`` reaches, as one comparable name: "this host" for every
    loopback and unspecified form (127.0.0.0/8, ::1, 0.0.0.0, ::, and their IPv4-mapped forms,
    all of which land on a local listener), else the IPv4 address an IPv6 form translates to,
    else the address itself."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.is_loopback or ip.is_unspecified:
            return "this host"
        translated, inner = embedded_ipv4(ip)
        if translated:
            ip = inner[0]
    if ip.is_loopback or ip.is_unspecified:
        return "this host"
    return str(ip)


def _addresses(host: str, resolve: Callable[[str], list[str]]) -> list[str]:
    literal = _literal(host)
    return [literal] if literal else resolve(host)


def reached_backend(addresses: Iterable[str], port: int, backends: Iterable[Backend],
                    resolve: Callable[[str], list[str]] = resolve_host) -> Backend | None:
    """The backend a connection to ``addresses`` on ``port`` may reach, if any: same port, and an
    address in common once both sides are resolved (a name for 127.0.0.1:9200 is still
    OpenSearch). A backend whose name does not resolve now is not reachable through it now."""
    where = {_where(a) for a in addresses}
    for backend in backends:
        if backend.port != port:
            continue
        try:
            if where & {_where(a) for a in _addresses(backend.host, resolve)}:
                return backend
        except Unresolvable:
            continue
    return None


def backoff_delay(failed_attempts: int, base_s: float, max_s: float) -> float:
    """Seconds before an outbound call's next attempt after ``failed_attempts`` failures: base,
    2·base, 4·base … capped at ``max_s`` (webhook deliveries, tipline messages, task retries)."""
    return float(min(max_s, base_s * (2 ** max(0, failed_attempts - 1))))


def check_target(url: str, allowed: Iterable[str | Origin] = (),
                 resolve: Callable[[str], list[str]] = resolve_host,
                 backends: Iterable[Backend] = (), purpose: Purpose = WEBHOOK) -> Target:
    """Check ``url`` and resolve its host once: the ``Target`` to connect to, else ``BadInput``
    saying why (``Unresolvable`` if the host does not resolve). An allowed origin (scheme, host
    and port exactly) is resolved but its addresses are not judged; an IP literal is not
    resolved at all. Nothing reaches one of ``backends``, allowed or not.

    Messages name the URL, never the addresses a name resolved to: they reach the client, and
    the answer to "what does this internal name resolve to" is not the client's to have (the
    server log has them)."""
    scheme, host, port, path = _parse(url, purpose)
    origin = Origin(scheme, host, port)
    addresses = _addresses(host, resolve)
    if not addresses:
        raise Unresolvable(f"{purpose.what} host {host!r} does not resolve to any address")
    if origin not in parse_origins(allowed, purpose):
        inside = [a for a in addresses if not is_public_address(a)]
        if inside:
            log.warning("%s target %s refused: %s resolves to %s, not public",
                        purpose.what, origin, host, ", ".join(inside))
            raise BadInput(f"{purpose.url} {url!r} reaches a loopback, private or link-local "
                           f"address; allow its origin {origin} in "
                           f"{purpose.setting} {purpose.allow_to}")
    backend = reached_backend(addresses, port, backends, resolve)
    if backend is not None:
        log.warning("%s target %s refused: %s resolves to %s, FactSieve's %s (%s:%s)",
                    purpose.what, origin, host, ", ".join(addresses), backend.what, backend.host,
                    backend.port)
        raise BadInput(f"{purpose.url} {url!r} reaches one of FactSieve's own services "
                       f"(OpenSearch, Redis, the LLM server); {purpose.refused}")
    return Target(scheme, host, port, path, tuple(addresses))


def check_url(url: str, allowed: Iterable[str | Origin] = (),
              resolve: Callable[[str], list[str]] = resolve_host,
              backends: Iterable[Backend] = ()) -> str:
    """Return ``url`` if webhooks may be sent to it, else raise ``BadInput`` saying why. An
    allowed origin whose name does not resolve yet is accepted, so it may be created before its
    name exists (every attempt checks it again)."""
    allowed = parse_origins(allowed)
    try:
        check_target(url, allowed, resolve, backends)
    except Unresolvable:
        if origin_of(url) not in allowed:
            raise
    return url


def post(target: Target, body: bytes, headers: Mapping[str, str], *, deadline_s: float,
         tls: ssl.SSLContext | None = None, max_body: int = MAX_RESPONSE_BYTES) -> Reply:
    """A webhook delivery: POST ``body`` to ``target``'s checked addresses and read at most
    ``max_body`` of the answer, all within ``deadline_s`` (``transport.request``);
    ``DeliveryError`` says what went wrong."""
    return request("POST", target, body, headers, deadline_s=deadline_s, tls=tls, max_body=max_body)
