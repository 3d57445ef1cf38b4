"""The outbound transport: one HTTP request to an address ``plugin.net.outbound`` checked,
under one deadline, reading a bounded answer (``request``; webhooks' ``post`` and image fetches,
``plugin.image.fetch``, both go through it).

``http.client``, which never decompresses, over a socket we connected ourselves: the Host
header, the TLS server name and the certificate check use the URL's host while the connection
goes to the checked IP, so a name with a zero TTL cannot pass the check with one address and
connect to another.
"""
from __future__ import annotations

import functools
import http.client
import io
import logging
import socket
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from plugin.errors import BackendError

log = logging.getLogger(__name__)

#: At most this much of a receiver's response body is read unless the caller says otherwise:
#: the status code is all a webhook delivery needs, and a receiver must not be able to fill a
#: worker's memory.
MAX_RESPONSE_BYTES = 64 * 1024
#: The status line and headers together may not exceed this (http.client alone would allow
#: 100 header lines of 64 KiB each).
MAX_RESPONSE_HEAD_BYTES = 64 * 1024


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


class DeliveryError(BackendError):
    """A receiver could not be reached in time or answered outside HTTP. Never leaves the
    store: ``WebhookStore.attempt`` records it as a failed attempt with this message (an image
    fetch turns it into a ``BadInput`` naming the image_url)."""

    title = "Webhook delivery failed"


@dataclass(frozen=True)
class Reply:
    """What a receiver answered: its status and at most ``max_body`` bytes of its body, as
    sent (never decompressed); ``complete`` is False when we stopped before the body's end;
    ``headers`` with lower-cased names (the last of a repeated one)."""

    status: int
    body: bytes
    complete: bool
    headers: Mapping[str, str] = field(default_factory=dict, compare=False)


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


def request(method: str, target: Target, body: bytes | None = None,
            headers: Mapping[str, str] | None = None, *, deadline_s: float,
            tls: ssl.SSLContext | None = None, max_body: int = MAX_RESPONSE_BYTES) -> Reply:
    """Send ``method`` to ``target``'s checked addresses (the first that accepts a connection)
    and read the answer, all within ``deadline_s``; ``DeliveryError`` says what went wrong.
    Redirects are never followed: a 3xx is an answer like any other.

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
                failures.append((address, str(exc)))
        if sock is None:
            # the log (readable by the subscriber) names the reasons, never the addresses
            log.info("%s to %s port %s: no connection (%s)", method, target.host, target.port,
                     "; ".join(f"{a}: {why}" for a, why in failures))
            reasons = "; ".join(dict.fromkeys(why for _, why in failures))
            raise DeliveryError(f"ConnectionError: cannot connect to {target.host} port "
                                f"{target.port} ({reasons})")
        if target.scheme == "https":
            phase = "in the TLS handshake"
            sock.settimeout(deadline.left())  # do_handshake's timeout bounds the whole handshake
            sock = (tls or default_tls_context()).wrap_socket(sock, server_hostname=target.host)
        wrapped = _DeadlineSocket(sock, deadline)
        conn = http.client.HTTPConnection(target.host, target.port)
        conn.sock = wrapped  # type: ignore[assignment]  # connected: http.client won't connect
        phase = "sending the request"
        conn.request(method, target.path, body=body,
                     headers={"Host": target.host_header, **(headers or {})})
        phase = "waiting for the response"
        wrapped.reader.budget = MAX_RESPONSE_HEAD_BYTES
        resp = conn.getresponse()
        wrapped.reader.budget = None
        phase = f"reading the body of an HTTP {resp.status} response"
        data = resp.read(max_body)
        return Reply(resp.status, data, resp.isclosed(),
                     {k.lower(): v for k, v in resp.getheaders()})
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
