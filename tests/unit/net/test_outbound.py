"""Where an outbound request may go (``plugin.net.outbound``): public addresses, webhook URLs,
allowed origins, FactSieve's own backends, and the checked target an attempt connects to."""
import ipaddress

import pytest

from plugin.errors import BadInput
from plugin.net.outbound import (Backend, Origin, Target, Unresolvable, backends_of, check_target,
                                     check_url, is_public_address, origin_of, parse_origin, reached_backend)
from plugin.settings import Settings


@pytest.mark.parametrize("address, public", [
    ("8.8.8.8", True), ("93.184.216.34", True), ("2001:4860:4860::8888", True),
    ("127.0.0.1", False), ("127.1.2.3", False), ("::1", False),
    ("10.0.0.1", False), ("172.16.5.4", False), ("192.168.1.1", False), ("fc00::1", False),
    ("169.254.169.254", False), ("fe80::1", False), ("fe80::1%eth0", False),
    ("100.64.0.1", False),            # carrier-grade NAT
    ("0.0.0.0", False), ("::", False), ("224.0.0.1", False), ("ff02::1", False),
    ("::ffff:127.0.0.1", False), ("::ffff:10.0.0.1", False), ("::ffff:8.8.8.8", True),
    ("192.0.2.10", False),            # documentation range
    # IPv6 forms embedding an IPv4 address are judged by that address
    ("64:ff9b::7f00:1", False), ("64:ff9b::a00:1", False), ("64:ff9b::808:808", True),   # NAT64
    ("64:ff9b:1::7f00:1", False), ("64:ff9b:1::808:808", False),                        # NAT64 local use
    ("2002:7f00:1::", False), ("2002:a00:1::1", False), ("2002:808:808::1", True),     # 6to4
    ("::127.0.0.1", False), ("::10.0.0.1", False), ("::169.254.169.254", False),       # IPv4-compatible
    ("::8.8.8.8", True), ("::2", False),
    ("::ffff:0:7f00:1", False), ("::ffff:0:808:808", True),                            # IPv4-translated
    ("::ffff:169.254.169.254", False), ("::ffff:224.0.0.1", False),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", False),                                    # Teredo
])
def test_is_public_address(address, public):
    assert is_public_address(address) is public


def resolver(table):
    def resolve(host):
        return table[host]
    return resolve


RESOLVE = resolver({"hooks.example.org": ["93.184.216.34"], "internal.example.org": ["10.0.0.7"],
                    "split.example.org": ["93.184.216.34", "127.0.0.1"], "localhost": ["127.0.0.1", "::1"]})


@pytest.mark.parametrize("url, allowed, refusal", [
    ("https://hooks.example.org/fs", (), None),
    ("http://hooks.example.org:8443/fs?x=1", (), None),
    ("https://internal.example.org/fs", (), "private"),
    ("https://split.example.org/fs", (), "loopback"),           # one bad address is enough
    ("http://localhost:9000/", (), "loopback"),
    ("http://localhost:9000/", ("http://localhost:9000",), None),
    ("http://LOCALHOST./", ("http://localhost",), None),        # the scheme's default port
    ("http://localhost/", ("http://localhost:80",), None),
    ("http://127.0.0.1:5000/", ("http://127.0.0.1:5000",), None),
    ("http://internal.example.org/", ("http://127.0.0.1:80",), "private"),
    # an allowed origin is scheme, host and port: nothing else on that host
    ("http://localhost:9001/", ("http://localhost:9000",), "loopback"),
    ("https://localhost:9000/", ("http://localhost:9000",), "loopback"),
    ("http://localhost/", ("http://localhost:8080",), "loopback"),
    ("http://127.0.0.1:5000/", ("http://localhost:5000",), "loopback"),
    ("ftp://hooks.example.org/", (), "http or https"),
    ("file:///etc/passwd", (), "http or https"),
    ("https:///nohost", (), "no host"),
    ("https://u:p@hooks.example.org/", (), "credentials"),
    ("https://hooks.example.org:99999/", (), "malformed"),
    # port 0 used to mean "the default"; every port is 1 to 65535, written in ASCII digits
    ("http://hooks.example.org:0/", (), "port '0'"),
    ("http://localhost:0/", ("http://localhost:80",), "port '0'"),
    ("http://hooks.example.org:00/", (), "port '00'"),
    ("http://hooks.example.org:65536/", (), "malformed|port"),
    ("http://hooks.example.org:+80/", (), "malformed|port"),
    ("http://hooks.example.org: 80/", (), "malformed|port"),
    ("http://hooks.example.org:-1/", (), "malformed|port"),
    ("http://[2001:db8::1]:0/", (), "port '0'"),
])
def test_check_url(url, allowed, refusal):
    if refusal is None:
        assert check_url(url, allowed, RESOLVE) == url
    else:
        with pytest.raises(BadInput, match=refusal) as err:
            check_url(url, allowed, RESOLVE)
        # the addresses a name resolves to are the server's to know, not the client's
        assert not {"10.0.0.7", "127.0.0.1", "::1"} & set(err.value.detail.replace("'", " ").split())


@pytest.mark.parametrize("url, port", [
    ("http://hooks.example.org:/", 80),            # an empty port is the default (RFC 3986)
    ("https://hooks.example.org/", 443),
    ("http://hooks.example.org:080/", 80),
    ("http://hooks.example.org:65535/", 65535),
    ("http://hooks.example.org:1/", 1),
    ("http://[2001:4860:4860::8888]:8080/", 8080),
])
def test_ports_in_range_are_kept(url, port):
    assert check_target(url, (), lambda host: ["93.184.216.34"]).port == port


@pytest.mark.parametrize("entry, origin", [
    ("http://127.0.0.1:8080", Origin("http", "127.0.0.1", 8080)),
    (" HTTP://Hooks.Internal.:8080/ ", Origin("http", "hooks.internal", 8080)),
    ("https://hooks.internal", Origin("https", "hooks.internal", 443)),
    ("http://[::1]:9000", Origin("http", "::1", 9000)),
    ("http://bücher.internal:81", Origin("http", "xn--bcher-kva.internal", 81)),
])
def test_parse_origin(entry, origin):
    assert parse_origin(entry) == origin
    assert parse_origin(str(origin)) == origin  # its text is the normal form settings keep


@pytest.mark.parametrize("entry, refusal", [
    ("127.0.0.1", r"not an origin: write scheme://host:port, e\.g\. http://127\.0\.0\.1:8080"),
    ("hooks.internal", "not an origin"),
    ("localhost:8080", r"e\.g\. http://localhost:8080,"),
    ("http://hooks.internal:8080/hook", "path or query"),
    ("http://hooks.internal:8080?x=1", "path or query"),
    ("ftp://hooks.internal:21", "http or https"),
    ("http://hooks.internal:0", "port '0'"),
    ("http://u:p@hooks.internal:8080", "credentials"),
])
def test_parse_origin_refusals(entry, refusal):
    with pytest.raises(BadInput, match=refusal):
        parse_origin(entry)


def test_backends_of_reads_each_url_with_its_clients_default_port():
    assert backends_of([("OpenSearch", "http://os1:9200", 9200), ("OpenSearch", "https://u:p@OS2.", 443),
                        ("OpenSearch", "os3", 9200), ("Redis", "redis://:pw@127.0.0.1/0", 6379),
                        ("Redis", "unix:///run/redis.sock", 6379), ("the LLM server", "http://llm/v1", 80),
                        ("OpenSearch", "http://os1:9200", 9200)]) == (
        Backend("OpenSearch", "os1", 9200), Backend("OpenSearch", "os2", 443),
        Backend("OpenSearch", "os3", 9200), Backend("Redis", "127.0.0.1", 6379),
        Backend("the LLM server", "llm", 80))


def test_settings_name_every_backend():
    settings = Settings(_env_file=None, opensearch_url="http://os1:9200, https://os2", llm_url="http://llm:8089/v1",
                        redis_url="redis://cache:6380/1")
    assert backends_of(settings.backend_urls) == (
        Backend("OpenSearch", "os1", 9200), Backend("OpenSearch", "os2", 443),
        Backend("Redis", "cache", 6380), Backend("the LLM server", "llm", 8089))


def is_literal(host):
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


OWN = (Backend("OpenSearch", "127.0.0.1", 9200), Backend("Redis", "localhost", 6379),
       Backend("OpenSearch", "opensearch-node", 9200), Backend("the LLM server", "llm.internal", 8089))
OWN_RESOLVE = resolver({"localhost": ["127.0.0.1", "::1"], "opensearch-node": ["172.18.0.3"],
                        "llm.internal": ["10.1.1.1"], "alias.example": ["127.0.0.1"],
                        "public.example": ["93.184.216.34"], "node.alias": ["::ffff:172.18.0.3"]})


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:9200/factchecks/_doc/x",
    "http://localhost:9200/factchecks/_doc/x",
    "http://alias.example:9200/x",               # a name that resolves to 127.0.0.1
    "http://0.0.0.0:9200/x",
    "http://[::1]:9200/x",
    "http://[::]:9200/x",
    "http://[::ffff:127.0.0.1]:9200/x",
    "http://127.0.0.2:9200/x",                   # all of 127/8 is this host
    "http://127.0.0.1:6379/",                    # Redis, named localhost in its URL
    "http://[::1]:6379/",
    "https://127.0.0.1:9200/x",                  # the scheme does not matter: the port does
    "http://172.18.0.3:9200/x",                  # a node named in its URL, by its address
    "http://node.alias:9200/x",
    "http://10.1.1.1:8089/v1/chat/completions",
])
def test_own_services_are_refused_whatever_the_allow_list_says(url):
    for allowed in ((), (str(origin_of(url)),)):
        with pytest.raises(BadInput) as err:
            check_url(url, allowed, OWN_RESOLVE, OWN)
        if allowed:
            assert "FactSieve's own services" in err.value.detail
        if not is_literal(origin_of(url).host):  # a name: its addresses are not echoed
            assert not any(a in err.value.detail for a in ("127.0.0.1", "172.18.0.3", "::"))


@pytest.mark.parametrize("url, allowed", [
    ("http://127.0.0.1:9201/x", ("http://127.0.0.1:9201",)),     # another port on the same host
    ("http://172.18.0.3:8080/x", ("http://172.18.0.3:8080",)),
    ("http://public.example:9200/x", ()),                          # OpenSearch's port elsewhere
])
def test_other_ports_and_hosts_are_not_backends(url, allowed):
    assert check_url(url, allowed, OWN_RESOLVE, OWN) == url


def test_a_backend_that_does_not_resolve_reaches_nothing():
    def resolve(host):
        if host == "gone.internal":
            raise Unresolvable("gone")
        return ["127.0.0.1"]
    assert reached_backend(["127.0.0.1"], 9200, [Backend("OpenSearch", "gone.internal", 9200)], resolve) is None
    assert reached_backend(["127.0.0.1"], 9200, [Backend("OpenSearch", "x", 9200)], resolve).what == "OpenSearch"


# -- the target an attempt connects to ------------------------------------------------------------
def once(addresses):
    """A resolver that answers once: a second lookup (the rebinding window) fails the test."""
    calls = []

    def resolve(host):
        calls.append(host)
        assert len(calls) == 1, f"{host!r} resolved again"
        return list(addresses)
    resolve.calls = calls
    return resolve


@pytest.mark.parametrize("url, allowed, addresses, expected", [
    ("https://hooks.example.org/fs", (), ["93.184.216.34"],
     Target("https", "hooks.example.org", 443, "/fs", ("93.184.216.34",))),
    ("http://Hooks.Example.org.:8080?x=1&y=a b", (), ["2001:4860:4860::8888", "93.184.216.34"],
     Target("http", "hooks.example.org", 8080, "/?x=1&y=a%20b", ("2001:4860:4860::8888", "93.184.216.34"))),
    ("http://hooks.example.org/a b/%41/ü", (), ["93.184.216.34"],
     Target("http", "hooks.example.org", 80, "/a%20b/%41/%C3%BC", ("93.184.216.34",))),
    ("https://bücher.example/x#frag", (), ["93.184.216.34"],
     Target("https", "xn--bcher-kva.example", 443, "/x", ("93.184.216.34",))),
    ("http://localhost:9000/", ("http://localhost:9000",), ["127.0.0.1", "::1"],  # listed: resolved, not judged
     Target("http", "localhost", 9000, "/", ("127.0.0.1", "::1"))),
])
def test_check_target_pins_the_checked_addresses(url, allowed, addresses, expected):
    resolve = once(addresses)
    assert check_target(url, allowed, resolve) == expected
    assert len(resolve.calls) == 1


@pytest.mark.parametrize("url, address", [
    ("http://8.8.8.8:81/x", "8.8.8.8"),
    ("https://[2001:4860:4860:0::8888]/x", "2001:4860:4860::8888"),
])
def test_check_target_never_resolves_a_literal(url, address):
    def resolve(host):
        raise AssertionError("resolved a literal")
    assert check_target(url, (), resolve).addresses == (address,)


@pytest.mark.parametrize("url, addresses, refusal", [
    ("https://split.example.org/", ["93.184.216.34", "127.0.0.1"], "loopback, private"),
    ("https://nat64.example.org/", ["64:ff9b::7f00:1"], "loopback, private"),
    ("http://[::ffff:127.0.0.1]/", None, "loopback, private"),
    ("http://[2002:a9fe:a9fe::]/", None, "loopback, private"),   # 6to4 of 169.254.169.254
    ("http://nothing.example.org/", [], "does not resolve"),
])
def test_check_target_refuses(url, addresses, refusal, caplog):
    with pytest.raises(BadInput, match=refusal) as err:
        check_target(url, (), lambda host: addresses)
    # the client learns that the URL is refused, not what the name resolves to (the log does)
    for address in addresses or ():
        assert address not in err.value.detail
    if addresses:
        assert addresses[-1] in caplog.text  # the one that is not public


@pytest.mark.parametrize("target, header", [
    (Target("http", "hooks.example.org", 80, "/", ()), "hooks.example.org"),
    (Target("http", "hooks.example.org", 443, "/", ()), "hooks.example.org:443"),
    (Target("https", "hooks.example.org", 443, "/", ()), "hooks.example.org"),
    (Target("https", "hooks.example.org", 8443, "/", ()), "hooks.example.org:8443"),
    (Target("http", "2001:db8::1", 8080, "/", ()), "[2001:db8::1]:8080"),
])
def test_host_header(target, header):
    assert target.host_header == header
