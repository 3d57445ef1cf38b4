"""The outbound transport (``plugin.net.outbound.post``) against real HTTP(S) servers on
127.0.0.1 that misbehave: gzip bombs, drips, silence, huge headers, certificates."""
import gzip
import shutil
import ssl
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from plugin.errors import BadInput
from plugin.net.outbound import MAX_RESPONSE_BYTES, DeliveryError, Reply, Target, check_target, post
from plugin.service.signing import delivery_headers
from plugin.service.webhooks import DeliveryStatus
from tests.unit.net.test_outbound import once
from tests.unit.service.test_webhooks import KNOWN, make_store, planned


# -- the transport, against real servers on 127.0.0.1 --------------------------------------------
class Server:
    """An HTTP(S) server in a thread; ``answer(handler, server)`` answers each POST."""

    def __init__(self, answer, tls=None):
        self.requests, self.sni, self.stop = [], [], threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                outer.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                answer(self, outer)

            def log_message(self, *args):
                pass

        class Threading(ThreadingHTTPServer):
            daemon_threads, block_on_close = True, False

            def handle_error(self, request, client_address):
                pass  # the client hanging up on a bomb or a drip is the point

        self.server = Threading(("127.0.0.1", 0), Handler)
        if tls is not None:
            tls.sni_callback = lambda sslobj, name, ctx: self.sni.append(name)
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()

    def close(self):
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def serve():
    servers = []

    def start(answer, tls=None):
        servers.append(Server(answer, tls))
        return servers[-1]
    yield start
    for server in servers:
        server.close()


def ok(handler, server):
    handler.send_response(200)
    handler.send_header("Content-Length", "2")
    handler.end_headers()
    handler.wfile.write(b"ok")


BOMB = gzip.compress(b"\0" * 8_000_000)  # 8 MB that compresses to about 8 KB


def gzip_bomb(handler, server):
    handler.send_response(200)
    handler.send_header("Content-Encoding", "gzip")
    handler.send_header("Content-Length", str(len(BOMB)))
    handler.end_headers()
    handler.wfile.write(BOMB)


def big_body(handler, server):
    handler.send_response(500)
    handler.send_header("Content-Length", str(8_000_000))
    handler.end_headers()
    for _ in range(8_000_000 // 65536):
        handler.wfile.write(b"x" * 65536)


def drip(prefix, total):
    def answer(handler, server):
        handler.wfile.write(prefix)
        for _ in range(total):
            if server.stop.wait(0.2):
                return
            handler.wfile.write(b"x")
    return answer


HEADERS_200 = b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n"


def silent(handler, server):
    server.stop.wait(10)


def huge_headers(handler, server):
    handler.send_response(200)
    for i in range(90):  # 90 × 1 KB: under http.client's 100 headers, over our 64 KiB
        handler.send_header(f"X-Filler-{i}", "y" * 1000)
    handler.send_header("Content-Length", "0")
    handler.end_headers()


def local(server, host="127.0.0.1", scheme="http", path="/hook"):
    return Target(scheme, host, server.port, path, ("127.0.0.1",))


def send(target, deadline_s=5.0, **kw):
    headers = delivery_headers("post.matched", "dlv_1", "1700000000", KNOWN)
    return post(target, b'{"a":1}', headers, deadline_s=deadline_s, **kw)


def test_post_reaches_the_checked_address_with_the_original_host(serve):
    server = serve(ok)
    resolve = once(["127.0.0.1"])
    target = check_target(f"http://hooks.invalid:{server.port}/hook?x=1",
                          (f"http://hooks.invalid:{server.port}",), resolve)
    reply = send(target)  # .invalid never resolves: only the pinned address can have been used
    assert reply == Reply(200, b"ok", True) and len(resolve.calls) == 1
    request = server.requests[0]
    assert request["path"] == "/hook?x=1" and request["body"] == b'{"a":1}'
    assert request["headers"]["Host"] == f"hooks.invalid:{server.port}"
    assert request["headers"]["Accept-Encoding"] == "identity"
    assert request["headers"]["X-FactSieve-Signature"] == KNOWN


def test_localhost_is_resolved_once_and_keeps_its_host_header(serve):
    server = serve(ok)
    url = f"http://localhost:{server.port}/hook"
    with pytest.raises(BadInput, match="loopback"):
        check_target(url)
    target = check_target(url, (f"http://localhost:{server.port}",))  # the real resolver
    assert "127.0.0.1" in target.addresses
    assert send(target).status == 200
    assert server.requests[0]["headers"]["Host"] == f"localhost:{server.port}"


def test_post_tries_the_next_checked_address_when_one_refuses(serve):
    server = serve(ok)  # listens on 127.0.0.1 only, so 127.0.0.2 refuses the connection
    target = Target("http", "hooks.invalid", server.port, "/", ("127.0.0.2", "127.0.0.1"))
    assert send(target).status == 200 and len(server.requests) == 1


def test_post_reports_a_refused_connection(serve):
    server = serve(ok)
    port = server.port
    server.close()
    with pytest.raises(DeliveryError, match=r"^ConnectionError: cannot connect to hooks\.invalid port") as err:
        send(Target("http", "hooks.invalid", port, "/", ("127.0.0.1", "127.0.0.3")))
    # the delivery log is the subscriber's to read: the reason, never the addresses tried
    assert "127.0.0" not in err.value.detail and "refused" in err.value.detail


def test_gzip_bomb_is_never_decompressed(serve):
    server = serve(gzip_bomb)
    reply = send(local(server))
    assert reply.status == 200 and reply.body == BOMB and len(reply.body) < 16 * 1024
    assert server.requests[0]["headers"]["Accept-Encoding"] == "identity"


def test_at_most_64_kib_of_a_body_is_read(serve):
    server = serve(big_body)
    reply = send(local(server))
    assert reply.status == 500 and len(reply.body) == MAX_RESPONSE_BYTES == 65536
    assert reply.complete is False


@pytest.mark.parametrize("answer, phase", [
    (drip(HEADERS_200, 50), "reading the body of an HTTP 200 response"),
    (drip(b"HTTP/1.1 200 OK\r\nX-Slow: ", 50), "waiting for the response"),
    (silent, "waiting for the response"),
])
def test_one_deadline_covers_the_whole_attempt(serve, answer, phase):
    server = serve(answer)
    t0 = time.monotonic()
    with pytest.raises(DeliveryError, match="Timeout: no complete answer within the 0.7 s deadline") as err:
        send(local(server), deadline_s=0.7)
    took = time.monotonic() - t0
    assert phase in err.value.detail
    assert 0.6 < took < 2.5  # a byte every 0.2 s would keep a per-read timeout waiting 10 s


def test_response_headers_are_bounded(serve):
    server = serve(huge_headers)
    with pytest.raises(DeliveryError, match="ProtocolError: the response's status line and headers exceed"):
        send(local(server))


def test_attempt_through_a_dripping_receiver_records_a_failure(serve):
    server = serve(drip(HEADERS_200, 50))
    store = make_store(post, lambda host: ["127.0.0.1"], webhook_timeout_s=0.5, webhook_max_attempts=1,
                       webhook_allowed_hosts=(f"http://hooks.invalid:{server.port}",))
    _, did = planned(store, f"http://hooks.invalid:{server.port}/drip")
    t0 = time.monotonic()
    assert store.attempt(did).status is DeliveryStatus.FAILED
    assert time.monotonic() - t0 < 2.5
    attempt = store.delivery(did)["attempts"][0]
    assert attempt["status_code"] is None and attempt["error"].startswith("Timeout: ")
    assert server.requests[0]["headers"]["Host"] == f"hooks.invalid:{server.port}"


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """A self-signed certificate for ``hooks.test`` (a name that never resolves)."""
    if shutil.which("openssl") is None:  # `make test` needs it anyway (the secured node's certificates)
        pytest.fail("needs the openssl command to make a test certificate (apt-get install -y openssl)",
                    pytrace=False)
    folder = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", str(folder / "key.pem"), "-out", str(folder / "cert.pem"),
                    "-days", "2", "-subj", "/CN=hooks.test", "-addext", "subjectAltName=DNS:hooks.test"],
                   check=True, capture_output=True)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    client = ssl.create_default_context(cafile=str(folder / "cert.pem"))
    return server, client


def test_https_to_the_checked_address_verifies_the_original_host(serve, certificate):
    server_tls, client_tls = certificate
    server = serve(ok, tls=server_tls)
    target = check_target(f"https://hooks.test:{server.port}/tls", (f"https://hooks.test:{server.port}",),
                          once(["127.0.0.1"]))
    assert send(target, tls=client_tls) == Reply(200, b"ok", True)
    assert server.sni == ["hooks.test"]
    assert server.requests[0]["headers"]["Host"] == f"hooks.test:{server.port}"


@pytest.mark.parametrize("host, tls, message", [
    ("other.test", "client", "Hostname mismatch"),    # pinned to the right server, wrong name
    ("hooks.test", None, "CERTIFICATE_VERIFY_FAILED"),  # certifi's CAs never signed it
])
def test_https_certificate_is_checked(serve, certificate, host, tls, message):
    server_tls, client_tls = certificate
    server = serve(ok, tls=server_tls)
    with pytest.raises(DeliveryError, match=f"^SSLError: .*{message}"):
        send(local(server, host=host, scheme="https"), tls=client_tls if tls else None)
    assert server.requests == []
