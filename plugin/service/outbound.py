"""Outbound HTTP to receivers we do not trust (webhooks): which addresses may be reached, and
one POST to exactly the address that was checked, under one deadline, reading a bounded answer.

Pure address rules first (``is_public_address``, ``check_target``), then the transport
(``post``) on ``http.client``, which never decompresses and takes a socket we connected
ourselves: the Host header, the TLS server name and the certificate check use the URL's host
while the connection goes to the checked IP, so a name with a zero TTL cannot pass the check
with one address and connect to another.
"""
from __future__ import annotations


import functools
import http.client
import io
import ipaddress
import socket
import ssl
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from plugin.errors import BackendError, BadInput

#: At most this much of a receiver's response body is read: the status code is all a delivery
#: needs, and a receiver must not be able to fill a worker's memory.
MAX_RESPONSE_BYTES = 64 * 1024
#: The status line and headers together may not exceed this (http.client alone would allow
#: 100 header lines of 64 KiB each).
MAX_RESPONSE_HEAD_BYTES = 64 * 1024


class Unresolvable(BadInput):
    """The webhook host does not resolve. A ``BadInput`` when a subscription is created; during
    a delivery it is a failed attempt that is retried, since DNS outages pass."""


class DeliveryError(BackendError):
    """A receiver could not be reached in time or answered outside HTTP. Never leaves the
    store: ``WebhookStore.attempt`` records it as a failed attempt with this message."""

    title = "Webhook delivery failed"



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


def resolve_host(host: str) -> list[str]:
    """The host's addresses in ``getaddrinfo``'s order (the system's preference), deduplicated."""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise Unresolvable(f"webhook host {host!r} does not resolve: {exc}") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


#: where host lookups with a deadline run: ``getaddrinfo`` has no timeout of its own, so a
#: lookup that hangs is abandoned at the deadline (its thread finishes when the resolver gives
#: up); four at most, so hanging lookups cannot pile up threads
_LOOKUPS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="factsieve-dns")


def resolve_within(resolve: Callable[[str], list[str]], host: str, timeout_s: float) -> list[str]:
    """``resolve(host)``, or ``Unresolvable`` once ``timeout_s`` has passed: the lookup is part
    of a delivery attempt's deadline."""
    future = _LOOKUPS.submit(resolve, host)
    try:
        return future.result(timeout=max(timeout_s, 0.0))
    except FutureTimeout:
        raise Unresolvable(f"webhook host {host!r} did not resolve within {timeout_s:g} s") from None


@dataclass(frozen=True)
class Target:
    """Where one attempt goes: the URL's parts, and the checked addresses to connect to (in
    order) instead of resolving ``host`` again."""

    scheme: str
    host: str           # lower case, ASCII (IDNA), no trailing dot, IPv6 without brackets
    port: int
    path: str           # path and query, percent-encoded, never empty
    addresses: tuple[str, ...]

    @property
    def host_header(self) -> str:
        """The Host header: the URL's host (bracketed if IPv6), with the port unless default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == (443 if self.scheme == "https" else 80) else f"{host}:{self.port}"


def _parse(url: str) -> tuple[str, str, int, str]:
    """``(scheme, host, port, path)`` of a webhook URL, or ``BadInput`` saying what is wrong."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise BadInput(f"webhook URL {url!r} is malformed: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise BadInput(f"webhook URL {url!r} must be http or https")
    if not parts.hostname:
        raise BadInput(f"webhook URL {url!r} has no host")
    if parts.username is not None or parts.password is not None:
        raise BadInput(f"webhook URL for host {parts.hostname!r} must not carry credentials; "
                       "the signature authenticates deliveries")
    host = parts.hostname.lower().rstrip(".")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise BadInput(f"webhook URL {url!r} has a malformed host: {exc}") from None
    # what requests did: keep reserved characters and existing escapes, encode the rest
    path = quote(parts.path or "/", safe="/%:@!$&'()*+,;=-._~")
    if parts.query:
        path += "?" + quote(parts.query, safe="/%:@!$&'()*+,;=-._~?")
    return parts.scheme, host, port or (443 if parts.scheme == "https" else 80), path


def _literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None


def check_target(url: str, allowed_hosts: Iterable[str] = (),
                 resolve: Callable[[str], list[str]] = resolve_host) -> Target:
    """Check ``url`` and resolve its host once: the ``Target`` to connect to, else ``BadInput``
    saying why (``Unresolvable`` if the host does not resolve). A listed host is resolved but
    not judged; an IP literal is not resolved at all."""
    scheme, host, port, path = _parse(url)
    literal = _literal(host)
    addresses = [literal] if literal else resolve(host)
    if not addresses:
        raise Unresolvable(f"webhook host {host!r} does not resolve to any address")
    if host not in {h.lower().rstrip(".") for h in allowed_hosts}:
        for address in addresses:
            if not is_public_address(address):
                raise BadInput(f"webhook URL {url!r} resolves to {address}, a loopback, private "
                               "or link-local address; list the host in "
                               "FACTSIEVE_WEBHOOK_ALLOWED_HOSTS to allow it")
    return Target(scheme, host, port, path, tuple(addresses))


def check_url(url: str, allowed_hosts: Iterable[str] = (),
              resolve: Callable[[str], list[str]] = resolve_host) -> str:
    """Return ``url`` if webhooks may be sent to it, else raise ``BadInput`` saying why. A listed
    host is not resolved, so it may be created before its name exists."""
    _, host, _, _ = _parse(url)
    if host in {h.lower().rstrip(".") for h in allowed_hosts}:
        return url
    check_target(url, (), resolve)
    return url


# -- the transport: one POST to a checked address, under one deadline -------------------------
@dataclass(frozen=True)
class Reply:
    """What a receiver answered: its status and at most ``MAX_RESPONSE_BYTES`` of its body, as
    sent (never decompressed); ``complete`` is False when we stopped before the body's end."""

    status: int
    body: bytes
    complete: bool


class Deadline:
    """One point in time for a whole attempt, so that a receiver dripping a byte just inside
    each read timeout cannot stretch it: every blocking step gets only the time left."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        remaining = self.end - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("deadline reached")
        return remaining


class _DeadlineReader(io.RawIOBase):
    """The socket as http.client reads it: every ``recv`` bounded by the deadline, and at most
    ``budget`` bytes while ``budget`` is set (the status line and headers)."""

    def __init__(self, sock: socket.socket, deadline: Deadline) -> None:
        super().__init__()
        self.sock, self.deadline = sock, deadline
        self.budget: int | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self.budget is not None:
            if self.budget <= 0:
                raise DeliveryError(f"ProtocolError: the response's status line and headers "
                                    f"exceed {MAX_RESPONSE_HEAD_BYTES} bytes")
            view = view[:self.budget]
        self.sock.settimeout(self.deadline.left())
        n = self.sock.recv_into(view)
        if self.budget is not None:
            self.budget -= n
        return n


class _DeadlineSocket:
    """What ``http.client.HTTPConnection`` gets as its socket: sends and reads bounded by the
    deadline. Closing it is a no-op: ``post`` owns the real socket and closes it when done (the
    connection closes its socket before the body is read on ``Connection: close``)."""

    def __init__(self, sock: socket.socket, deadline: Deadline) -> None:
        self.sock, self.deadline = sock, deadline
        self.reader = _DeadlineReader(sock, deadline)

    def sendall(self, data: bytes) -> None:
        self.sock.settimeout(self.deadline.left())  # sendall's timeout bounds the whole send
        self.sock.sendall(data)

    def makefile(self, mode: str, *args: Any, **kwargs: Any) -> io.BufferedReader:
        return io.BufferedReader(self.reader)

    def close(self) -> None:
        pass


@functools.lru_cache(maxsize=1)
def default_tls_context() -> ssl.SSLContext:
    """Certificates checked against certifi's CAs (what ``requests`` used before), hostname
    included."""
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


def _connect(address: str, port: int, deadline: Deadline) -> socket.socket:
    """A TCP connection to ``address`` itself: numeric only, so nothing is resolved again."""
    family, kind, proto, _, sockaddr = socket.getaddrinfo(
        address, port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(deadline.left())
        sock.connect(sockaddr)
    except BaseException:
        sock.close()
        raise
    return sock


def post(target: Target, body: bytes, headers: Mapping[str, str], *, deadline_s: float,
         tls: ssl.SSLContext | None = None, max_body: int = MAX_RESPONSE_BYTES) -> Reply:
    """POST ``body`` to ``target``'s checked addresses (the first that accepts a connection) and
    read the answer, all within ``deadline_s``; ``DeliveryError`` says what went wrong.

    http.client rather than requests: it never decompresses, and handing it a connected socket
    is public API (``conn.sock``), where pinning the address in urllib3 means subclassing its
    pools. TLS verifies the certificate against ``target.host`` (also the SNI name)."""
    deadline = Deadline(deadline_s)
    phase = "connecting"
    sock: socket.socket | None = None
    conn: http.client.HTTPConnection | None = None
    try:
        failures = []
        for address in target.addresses:
            try:
                sock = _connect(address, target.port, deadline)
                break
            except TimeoutError:
                raise
            except OSError as exc:
                failures.append(f"{address}: {exc}")
        if sock is None:
            raise DeliveryError(f"ConnectionError: cannot connect to {target.host} port "
                                f"{target.port} ({'; '.join(failures)})")
        if target.scheme == "https":
            phase = "in the TLS handshake"
            sock.settimeout(deadline.left())  # do_handshake's timeout bounds the whole handshake
            sock = (tls or default_tls_context()).wrap_socket(sock, server_hostname=target.host)
        wrapped = _DeadlineSocket(sock, deadline)
        conn = http.client.HTTPConnection(target.host, target.port)
        conn.sock = wrapped  # type: ignore[assignment]  # connected: http.client won't connect
        phase = "sending the request"
        conn.request("POST", target.path, body=body,
                     headers={"Host": target.host_header, **headers})
        phase = "waiting for the response"
        wrapped.reader.budget = MAX_RESPONSE_HEAD_BYTES
        resp = conn.getresponse()
        wrapped.reader.budget = None
        phase = f"reading the body of an HTTP {resp.status} response"
        data = resp.read(max_body)
        return Reply(resp.status, data, resp.isclosed())
    except DeliveryError:
        raise
    except TimeoutError:
        raise DeliveryError(f"Timeout: no complete answer within the {deadline_s:g} s deadline "
                            f"({phase})") from None
    except ssl.SSLError as exc:
        raise DeliveryError(f"SSLError: {exc} ({phase})"[:500]) from None
    except (http.client.HTTPException, ValueError) as exc:
        raise DeliveryError(f"ProtocolError: {type(exc).__name__}: {exc} ({phase})"[:500]) from None
    except OSError as exc:
        raise DeliveryError(f"ConnectionError: {type(exc).__name__}: {exc} ({phase})"[:500]) from None
    finally:
        if conn is not None:
            conn.close()  # the response's buffers; the wrapped socket's close is a no-op
        if sock is not None:
            sock.close()
