"""Fetching an image_url through the guarded outbound client (``plugin.image.fetch``), from a
real HTTP server on 127.0.0.1 whose origin the settings allow (or not)."""
import io
import time

import pytest

from plugin.errors import BadInput, ContentTooLarge, UnsupportedContentType
from plugin.image.fetch import fetch_image
from tests.http_server import serving

MAX = 2048


def png() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (16, 16), (200, 30, 30)).save(out, "PNG")
    return out.getvalue()


#: path -> (status, headers, body); "/slow" answers after the deadline
ROUTES = {
    "/ok.png": (200, {"Content-Type": "image/png"}, png()),
    "/charset.jpg": (200, {"Content-Type": "IMAGE/JPEG; charset=binary"}, b"\xff\xd8\xff"),
    "/pic.svg": (200, {"Content-Type": "image/svg+xml"}, b"<svg xmlns='http://www.w3.org/2000/svg'/>"),
    "/page": (200, {"Content-Type": "text/html"}, b"<html></html>"),
    "/untyped": (200, {}, b"\x89PNG"),
    "/big.png": (200, {"Content-Type": "image/png"}, b"\0" * (MAX + 1)),
    "/moved": (302, {"Location": "/ok.png"}, b""),
    "/missing": (404, {"Content-Type": "text/plain"}, b"no"),
}


@pytest.fixture(scope="module")
def server():
    seen = []

    def answer(path, headers):
        seen.append((path, headers))
        if path == "/slow":
            time.sleep(1.5)
        return ROUTES.get(path, (200, {"Content-Type": "image/png"}, b"x"))

    with serving(answer) as srv:
        srv.seen = seen
        yield srv


@pytest.fixture
def allowed(settings, server):
    return settings.model_copy(update={"image_allowed_hosts": (server.origin,), "image_max_bytes": MAX,
                                       "image_fetch_timeout_s": 1.0})


def test_an_image_from_an_allowed_origin_is_fetched(server, allowed):
    assert fetch_image(f"{server.origin}/ok.png", allowed) == ROUTES["/ok.png"][2]
    path, headers = server.seen[-1]
    assert path == "/ok.png" and headers["Accept-Encoding"] == "identity"
    assert fetch_image(f"{server.origin}/charset.jpg", allowed) == b"\xff\xd8\xff"


def test_a_private_address_is_refused_unless_its_origin_is_allowed(server, allowed):
    closed = allowed.model_copy(update={"image_allowed_hosts": ()})
    n = len(server.seen)
    # issue 35: the rule, not the network's answer (the old message said "reaches a loopback …")
    with pytest.raises(BadInput, match="is refused: images are fetched only from hosts that resolve to "
                                       "public addresses, or from an origin allowed in "
                                       "FACTSIEVE_IMAGE_ALLOWED_HOSTS") as err:
        fetch_image(f"{server.origin}/ok.png", closed)
    assert err.value.detail.startswith("image_url ") and "webhook" not in err.value.detail
    assert len(server.seen) == n  # never connected
    other_port = allowed.model_copy(update={"image_allowed_hosts": ("http://127.0.0.1:1",)})
    with pytest.raises(BadInput, match="resolve to public addresses"):
        fetch_image(f"{server.origin}/ok.png", other_port)


def test_factsieves_own_services_are_refused_even_when_allowed(allowed):
    backend = allowed.model_copy(update={"opensearch_url": "http://127.0.0.1:9200",
                                         "image_allowed_hosts": ("http://localhost:9200",)})
    with pytest.raises(BadInput, match="FactSieve's own services .*images are not fetched from there"):
        fetch_image("http://localhost:9200/_cat/indices", backend)


@pytest.mark.parametrize("url, error, message", [
    ("/pic.svg", UnsupportedContentType, "is image/svg\\+xml, not a raster image"),
    ("/page", UnsupportedContentType, "is text/html, not a raster image"),
    ("/untyped", UnsupportedContentType, "of no content type"),
    ("/big.png", ContentTooLarge, f"larger than {MAX} bytes"),
    ("/moved", BadInput, "redirect \\(HTTP 302\\); redirects are not followed"),
    ("/missing", BadInput, "answered HTTP 404"),
    ("/slow", BadInput, "could not be fetched: Timeout: no complete answer within"),
])
def test_what_is_not_an_image_is_refused_naming_the_url(server, allowed, url, error, message):
    with pytest.raises(error, match=message) as err:
        fetch_image(f"{server.origin}{url}", allowed)
    assert type(err.value) is error
    assert f"image_url '{server.origin}{url}'" in err.value.detail
    assert "ok.png" not in err.value.detail  # never a redirect's target (issue 35)


@pytest.mark.parametrize("url, message", [
    ("ftp://example.org/a.png", "image_url 'ftp://example.org/a.png' must be http or https"),
    ("http://user:pw@example.org/a.png", "image_url for host 'example.org' must not carry credentials$"),
    ("http:///a.png", "has no host"),
])
def test_malformed_urls_are_refused(allowed, url, message):
    with pytest.raises(BadInput, match=message):
        fetch_image(url, allowed)


def test_a_closed_port_is_a_bad_input(allowed):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    closed = allowed.model_copy(update={"image_allowed_hosts": (f"http://127.0.0.1:{port}",)})
    with pytest.raises(BadInput, match="could not be fetched: ConnectionError: cannot connect") as err:
        fetch_image(f"http://127.0.0.1:{port}/a.png", closed)
    assert err.value.detail.endswith("ConnectionError: cannot connect to its host")  # no OS words


def test_a_refusal_says_nothing_the_network_answered(settings):
    """Issue 35: whether an internal name resolves, where it resolves to, and whether it is one
    of FactSieve's own services is not the client's to learn: one message for all of them."""
    s = settings.model_copy(update={"opensearch_url": "http://127.0.0.1:9200", "image_fetch_timeout_s": 2.0})
    said = {}
    for name, host in (("resolves to loopback", "localhost"), ("resolves to nothing", "no-such-host.invalid"),
                       ("a backend", "127.0.0.1:9200"), ("a literal", "10.1.2.3")):
        with pytest.raises(BadInput) as err:
            fetch_image(f"http://{host}/a.png", s)
        said[name] = err.value.detail.replace(host, "HOST")
        assert "127.0.0.1" not in said[name].replace("HOST", "") and "resolve:" not in said[name]
    assert len(set(said.values())) == 1, said
    assert "does not resolve" not in said["resolves to nothing"]

