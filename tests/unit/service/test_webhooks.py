"""Webhook signing, URL safety, backoff and subscription filters: pure functions, by table.
Then the subscription store over an in-memory stand-in for Redis, and the transport against
real HTTP(S) servers on 127.0.0.1 that misbehave (gzip bombs, drips, silence, huge headers)."""
import gzip
import ipaddress
import shutil
import ssl
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from plugin.errors import BadInput, InvalidRequest, NotFound
from plugin.service import webhooks
from plugin.service.kv import KV
from plugin.service.webhooks import (MAX_RESPONSE_BYTES, MAX_SUBSCRIPTIONS_PER_OWNER, DeliveryError,
                                     DeliveryStatus, Event, Reply, Target, WebhookStore, backoff_delay,
                                     capacity_error, check_target, check_url, delivery_headers,
                                     delivery_id, is_public_address, post, rotated, sign,
                                     signature_header, signing_secrets, verify_signature, wants)
from plugin.service.outbound import Backend, Origin, backends_of, origin_of, parse_origin, reached_backend
from plugin.settings import Settings

# HMAC-SHA256("whsec_test", '1700000000.{"a":1}'), from `openssl dgst -sha256 -hmac whsec_test`
KNOWN = "sha256=38877139021993b830af32feea6e18a8da83eb2f6e49ee50bd9e4cf4ca4d3789"
BODY = b'{"a":1}'


def test_sign_matches_openssl():
    assert sign("whsec_test", 1700000000, BODY) == KNOWN
    assert sign("whsec_test", "1700000000", BODY) == KNOWN


@pytest.mark.parametrize("secret, body, ts, sig, now, ok", [
    ("whsec_test", BODY, "1700000000", KNOWN, 1700000000, True),
    ("whsec_test", BODY, "1700000000", KNOWN, 1700000299, True),     # inside the 300 s tolerance
    ("whsec_test", BODY, "1700000000", KNOWN, 1700000301, False),    # replayed too late
    ("whsec_test", BODY, "1700000000", KNOWN, 1699999600, False),    # from the future
    ("whsec_test", b'{"a":2}', "1700000000", KNOWN, 1700000000, False),  # body changed
    ("other", BODY, "1700000000", KNOWN, 1700000000, False),         # wrong secret
    ("whsec_test", BODY, "1700000001", KNOWN, 1700000000, False),    # timestamp changed
    ("whsec_test", BODY, None, KNOWN, 1700000000, False),
    ("whsec_test", BODY, "1700000000", None, 1700000000, False),
    ("whsec_test", BODY, "17e8", KNOWN, 1700000000, False),
    ("whsec_test", BODY, "1700000000", KNOWN.removeprefix("sha256="), 1700000000, False),
    # non-ASCII input is no match, never an exception
    ("whsec_test", BODY, "\u0661\u0667\u0660\u0660\u0660\u0660\u0660\u0660\u0660\u0660", KNOWN, 1700000000, False),
    ("whsec_test", BODY, "\uff11\uff17\uff10\uff10\uff10\uff10\uff10\uff10\uff10\uff10", KNOWN, 1700000000, False),
    ("whsec_test", BODY, "1700000000", "sha256=\u00e9" + KNOWN[8:], 1700000000, False),
    ("whsec_test", BODY, "1700000000", "\u00e9\u00e9\u00e9", 1700000000, False),
    ("whsec_test", BODY, "1700000000", "sha256=\u00e9," + KNOWN, 1700000000, True),  # one good entry
    ("whsec_t\u00e9st", BODY, "1700000000", KNOWN, 1700000000, False),            # non-ASCII secret
    ("whsec_test", BODY, "9" * 5000, KNOWN, 1700000000, False),                 # int() would raise
    # a rotation's list: any entry may match, spaces around commas allowed
    ("whsec_test", BODY, "1700000000", sign("newer_secret_x", 1700000000, BODY) + "," + KNOWN, 1700000000, True),
    ("whsec_test", BODY, "1700000000", KNOWN + ", " + sign("other", 1700000000, BODY), 1700000000, True),
    ("whsec_test", BODY, "1700000000", sign("a", 1700000000, BODY) + "," + sign("b", 1700000000, BODY),
     1700000000, False),
    ("whsec_test", BODY, "1700000000", ",".join(["x"] * 8 + [KNOWN]), 1700000000, False),  # 8 looked at
])
def test_verify_signature(secret, body, ts, sig, now, ok):
    assert verify_signature(secret, body, ts, sig, now=now) is ok


@pytest.mark.parametrize("failed, expected", [(0, 10), (1, 10), (2, 20), (3, 40), (4, 80), (8, 1280), (9, 1800), (30, 1800)])
def test_backoff_doubles_and_caps(failed, expected):
    assert backoff_delay(failed, 10, 1800) == expected


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
            raise webhooks.Unresolvable("gone")
        return ["127.0.0.1"]
    assert reached_backend(["127.0.0.1"], 9200, [Backend("OpenSearch", "gone.internal", 9200)], resolve) is None
    assert reached_backend(["127.0.0.1"], 9200, [Backend("OpenSearch", "x", 9200)], resolve).what == "OpenSearch"


SUB = {"id": "whk_1", "events": ["post.matched"], "languages": ["en", "es"], "min_score": 0.02}


@pytest.mark.parametrize("sub, lang, best, expected", [
    (SUB, "en", 0.03, True),
    (SUB, "en", 0.02, True),
    (SUB, "en", 0.019, False),
    (SUB, "fr", 0.5, False),
    (SUB, None, 0.5, False),
    (SUB, "en", None, False),                                   # no match at all
    ({**SUB, "languages": None, "min_score": None}, "fr", 0.0, True),
    ({**SUB, "languages": [], "min_score": None}, None, 0.001, True),
    ({**SUB, "events": []}, "en", 0.5, False),
])
def test_wants(sub, lang, best, expected):
    assert wants(sub, Event.POST_MATCHED, lang, best) is expected


def test_delivery_id_is_deterministic_per_subscription_and_key():
    a = delivery_id("whk_1", Event.POST_MATCHED, "post-1")
    assert a == delivery_id("whk_1", Event.POST_MATCHED, "post-1") and a.startswith("dlv_")
    assert a != delivery_id("whk_2", Event.POST_MATCHED, "post-1")
    assert a != delivery_id("whk_1", Event.POST_MATCHED, "post-2")


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


def test_delivery_headers_ask_for_an_identity_body():
    headers = delivery_headers("post.matched", "dlv_1", "1700000000", KNOWN)
    assert headers["Accept-Encoding"] == "identity" and headers["X-FactSieve-Signature"] == KNOWN
    assert headers["X-FactSieve-Delivery"] == "dlv_1" and headers["Content-Type"] == "application/json"


# -- secrets, rotation, caps ----------------------------------------------------------------------
def test_signature_header_is_one_signature_per_secret_newest_first():
    assert signature_header(["whsec_test"], 1700000000, BODY) == KNOWN  # one secret: unchanged
    both = signature_header(["whsec_new_secret", "whsec_test"], 1700000000, BODY)
    assert both == sign("whsec_new_secret", 1700000000, BODY) + "," + KNOWN
    for secret in ("whsec_new_secret", "whsec_test"):
        assert verify_signature(secret, BODY, "1700000000", both, now=1700000000)
    assert not verify_signature("whsec_other", BODY, "1700000000", both, now=1700000000)


def test_rotation_keeps_the_old_secret_for_the_overlap_only():
    sub = {"id": "whk_1", "secret": "old-secret-0123456789"}
    after = rotated(sub, "new-secret-0123456789", now=1000.0, overlap_s=60)
    assert sub == {"id": "whk_1", "secret": "old-secret-0123456789"}  # not changed in place
    assert after["secret"] == "new-secret-0123456789" and after["previous_secret"] == "old-secret-0123456789"
    assert signing_secrets(after, 1000.0) == ["new-secret-0123456789", "old-secret-0123456789"]
    assert signing_secrets(after, 1059.9) == ["new-secret-0123456789", "old-secret-0123456789"]
    assert signing_secrets(after, 1060.0) == ["new-secret-0123456789"]
    again = rotated(after, "third-secret-0123456789", now=1010.0, overlap_s=60)  # two at most
    assert signing_secrets(again, 1010.0) == ["third-secret-0123456789", "new-secret-0123456789"]
    assert signing_secrets(rotated(after, "x" * 16, now=1010.0, overlap_s=0), 1010.0) == ["x" * 16]
    assert signing_secrets(sub, 0) == ["old-secret-0123456789"]
    with pytest.raises(BadInput, match="overlap"):
        rotated(sub, "x" * 16, now=0, overlap_s=-1)


def test_capacity_error():
    assert capacity_error("key_1", 100, 100) is None
    error = capacity_error("key_1", 101, 100)
    assert isinstance(error, InvalidRequest) and isinstance(error, BadInput) and error.status == 422
    assert "owner 'key_1' already has 100 webhook subscriptions" in error.detail
    assert error.errors[0]["type"] == "subscription_limit"
    assert "this deployment" in capacity_error(None, 101, 100).detail


# -- the store, over an in-memory stand-in for Redis ---------------------------------------------
class FakeRedis:
    """The few Redis commands ``WebhookStore`` uses, enough to test it without a server."""

    def __init__(self):
        self.data = {}

    def get(self, key):
        return self.data.get(key)

    def set(self, key, value, ex=None, px=None, nx=False, xx=False):
        if (nx and key in self.data) or (xx and key not in self.data):
            return None
        self.data[key] = value
        return True

    def delete(self, *keys):
        return sum(self.data.pop(k, None) is not None for k in keys)

    def mget(self, keys):
        return [self.data.get(k) for k in keys]

    def sadd(self, key, *members):
        s = self.data.setdefault(key, set())
        before = len(s)
        s.update(members)
        return len(s) - before

    def srem(self, key, *members):
        s = self.data.get(key, set())
        n = len(s & set(members))
        s.difference_update(members)
        return n

    def smembers(self, key):
        return set(self.data.get(key, set()))

    def scard(self, key):
        return len(self.data.get(key, set()))

    def zadd(self, key, mapping):
        self.data.setdefault(key, {}).update(mapping)
        return len(mapping)

    def expire(self, key, seconds):
        return key in self.data

    def zrevrange(self, key, start, stop):
        z = self.data.get(key, {})
        return sorted(z, key=z.get, reverse=True)[start:stop + 1]

    def pttl(self, key):
        return -1

    def pipeline(self):
        return FakePipeline(self)


class FakePipeline:
    """Queues commands until ``execute``; after ``watch`` runs them at once until ``multi``."""

    def __init__(self, redis):
        self.redis, self.queue, self.immediate = redis, [], False

    def __getattr__(self, name):
        fn = getattr(self.redis, name)

        def call(*args, **kwargs):
            if self.immediate:
                return fn(*args, **kwargs)
            self.queue.append((fn, args, kwargs))
            return self
        return call

    def watch(self, *keys):
        self.immediate = True

    def multi(self):
        self.immediate = False

    def execute(self):
        out = [fn(*a, **kw) for fn, a, kw in self.queue]
        self.queue = []
        return out

    def reset(self):
        self.queue, self.immediate = [], False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.reset()


class Recorder:
    """A transport that records what it was asked to send and answers ``reply`` (or raises)."""

    def __init__(self, reply=Reply(200, b"", True), error=None):
        self.reply, self.error, self.calls = reply, error, []

    def __call__(self, target, body, headers, *, deadline_s):
        self.calls.append({"target": target, "body": body, "headers": headers, "deadline_s": deadline_s})
        if self.error is not None:
            raise self.error
        return self.reply


PUBLIC = {"hooks.example.org": ["93.184.216.34"]}


def make_store(transport=None, resolve=None, **settings):
    config = {"webhook_allowed_hosts": (), "webhook_max_attempts": 3, "webhook_backoff_s": 1.0,
              "webhook_timeout_s": 2.0, **settings}
    return WebhookStore(KV(Settings(**config), client=FakeRedis()), Settings(**config),
                        transport or Recorder(), resolve=resolve or (lambda host: PUBLIC[host]))


def planned(store, url="https://hooks.example.org/fs", **create):
    sub = store.create(url, [Event.POST_MATCHED], **create)
    did = store.plan(store._load(sub["id"]), Event.POST_MATCHED, {"post": {"id": "p1"}}, "p1")
    return sub, did


def test_store_sends_to_the_checked_address_not_a_second_lookup():
    lookups = []

    def rebinding(host):  # zero TTL: public for every check, loopback for anyone asking later
        lookups.append(host)
        return ["93.184.216.34"]
    transport = Recorder()
    store = make_store(transport, rebinding)
    sub, did = planned(store)
    lookups.clear()
    assert store.attempt(did).status is DeliveryStatus.DELIVERED
    assert lookups == ["hooks.example.org"]  # once, for the check; the transport got the address
    target = transport.calls[0]["target"]
    assert target.addresses == ("93.184.216.34",) and target.host_header == "hooks.example.org"
    assert 1.5 < transport.calls[0]["deadline_s"] <= 2.0  # what the lookup left of the 2 s
    headers, body = transport.calls[0]["headers"], transport.calls[0]["body"]
    assert verify_signature(sub["secret"], body, headers["X-FactSieve-Timestamp"], headers["X-FactSieve-Signature"])
    assert "," not in headers["X-FactSieve-Signature"]


def test_store_refuses_a_host_that_now_resolves_inside():
    answers = iter([["93.184.216.34"], ["127.0.0.1"]])
    transport = Recorder()
    store = make_store(transport, lambda host: next(answers))
    _, did = planned(store)
    assert store.attempt(did).status is DeliveryStatus.FAILED
    assert transport.calls == []
    assert store.delivery(did)["attempts"][0]["error"].startswith("refused: ")
    # the log is read through the API: it says why, not the address the host resolved to
    assert "127.0.0.1" not in store.delivery(did)["attempts"][0]["error"]


def test_the_delivery_log_names_no_resolved_address():
    error = DeliveryError("ConnectionError: cannot connect to hooks.example.org port 443 "
                          "(93.184.216.34: [Errno 111] Connection refused; "
                          "[2606:2800:220:1::1]:443: [Errno 101] Network is unreachable)")
    store = make_store(Recorder(error=error), webhook_max_attempts=1)
    _, did = planned(store)
    assert store.attempt(did).status is DeliveryStatus.FAILED
    logged = store.delivery(did)["attempts"][0]["error"]
    assert logged == ("ConnectionError: cannot connect to hooks.example.org port 443 "
                      "(<backend>: [Errno 111] Connection refused; "
                      "<backend>: [Errno 101] Network is unreachable)")


def test_store_refuses_at_delivery_a_listed_origin_that_now_reaches_a_backend():
    # allowed, and a receiver when subscribed; OpenSearch's address when the attempt comes
    answers = {"hooks.internal": ["10.9.9.9"], "127.0.0.1": ["127.0.0.1"]}
    transport = Recorder()
    store = make_store(transport, lambda host: answers[host],
                       webhook_allowed_hosts=("http://hooks.internal:9200",),
                       opensearch_url="http://127.0.0.1:9200")
    _, did = planned(store, "http://hooks.internal:9200/factchecks/_doc/x")
    answers["hooks.internal"] = ["127.0.0.1"]
    assert store.attempt(did).status is DeliveryStatus.FAILED
    assert transport.calls == []
    error = store.delivery(did)["attempts"][0]["error"]
    assert error.startswith("refused: ") and "FactSieve's own services" in error and "127.0.0.1" not in error


def test_store_refuses_own_services_at_subscription():
    store = make_store(resolve=lambda host: ["127.0.0.1"], opensearch_url="http://localhost:9200",
                       webhook_allowed_hosts=("http://127.0.0.1:9200", "http://hooks.internal:9200",
                                              "http://hooks.internal:6379", "http://hooks.internal:8080"))
    for url in ("http://127.0.0.1:9200/factchecks/_doc/x", "http://hooks.internal:9200/x",
                "http://hooks.internal:6379/"):
        with pytest.raises(BadInput, match="FactSieve's own services"):
            store.create(url, [Event.POST_MATCHED])
    assert store.create("http://hooks.internal:8080/hook", [Event.POST_MATCHED])["id"]
    assert store.list() and len(store.list()) == 1


def test_store_refuses_an_allow_list_of_bare_hosts():
    settings = Settings(_env_file=None).model_copy(update={"webhook_allowed_hosts": ("127.0.0.1",)})
    with pytest.raises(BadInput, match="not an origin"):
        WebhookStore(KV(settings, client=FakeRedis()), settings, Recorder())


def test_store_retries_a_host_that_stops_resolving():
    def resolve(host):
        if resolve.down:
            raise webhooks.Unresolvable(f"webhook host {host!r} does not resolve: outage")
        return ["93.184.216.34"]
    resolve.down = False
    store = make_store(resolve=resolve)
    _, did = planned(store)
    resolve.down = True
    outcome = store.attempt(did)
    assert outcome.status is DeliveryStatus.PENDING and outcome.retry_in == 1.0
    assert "does not resolve" in store.delivery(did)["attempts"][0]["error"]


def test_store_records_a_transport_failure_as_a_failed_attempt():
    error = DeliveryError("Timeout: no complete answer within the 2 s deadline (reading the body)")
    store = make_store(Recorder(error=error), webhook_max_attempts=2)
    _, did = planned(store)
    assert store.attempt(did) == webhooks.Outcome(DeliveryStatus.PENDING, 1.0)
    assert store.attempt(did) == webhooks.Outcome(DeliveryStatus.FAILED, None)
    attempts = store.delivery(did)["attempts"]
    assert [a["error"] for a in attempts] == [error.detail] * 2
    assert all(a["status_code"] is None for a in attempts)


def test_rotate_secret_signs_with_both_until_the_overlap_ends():
    transport = Recorder()
    store = make_store(transport)
    sub, did = planned(store)
    out = store.rotate_secret(sub["id"], overlap_s=3600)
    assert out["id"] == sub["id"] and out["secret"] != sub["secret"] and len(out["secret"]) >= 32
    assert out["previous_secret_expires_at"] > time.time() + 3500
    assert "secret" not in store.get(sub["id"]) and all("secret" not in s for s in store.list())
    store.attempt(did)
    headers, body = transport.calls[0]["headers"], transport.calls[0]["body"]
    ts, header = headers["X-FactSieve-Timestamp"], headers["X-FactSieve-Signature"]
    assert header.count("sha256=") == 2 and header.startswith(sign(out["secret"], ts, body))
    assert verify_signature(out["secret"], body, ts, header) and verify_signature(sub["secret"], body, ts, header)
    # ended overlap (or none asked for): only the new secret signs
    stored = store._load(sub["id"])
    assert signing_secrets(stored, stored["previous_secret_expires_at"]) == [out["secret"]]
    given = store.rotate_secret(sub["id"], secret="whsec_chosen_by_me", overlap_s=0)
    assert given["secret"] == "whsec_chosen_by_me" and "previous_secret_expires_at" not in given
    assert signing_secrets(store._load(sub["id"]), time.time()) == ["whsec_chosen_by_me"]


def test_rotate_secret_without_overlap_revokes_the_old_secret_at_once():
    transport = Recorder()
    store = make_store(transport)
    sub, did = planned(store)
    out = store.rotate_secret(sub["id"], overlap_s=0)
    store.attempt(did)
    headers, body = transport.calls[0]["headers"], transport.calls[0]["body"]
    ts, header = headers["X-FactSieve-Timestamp"], headers["X-FactSieve-Signature"]
    assert header == sign(out["secret"], ts, body)
    assert not verify_signature(sub["secret"], body, ts, header)


def test_rotate_secret_refusals():
    store = make_store()
    sub, _ = planned(store)
    with pytest.raises(BadInput, match="16 to 256"):
        store.rotate_secret(sub["id"], secret="short")
    with pytest.raises(BadInput, match="overlap"):
        store.rotate_secret(sub["id"], overlap_s=10 ** 9)
    store.delete(sub["id"])
    with pytest.raises(NotFound):
        store.rotate_secret(sub["id"])
    assert store.kv.client.get(store.kv.key("webhook", sub["id"])) is None  # not resurrected


def test_rotate_secret_starts_over_when_the_subscription_changed_meanwhile():
    from redis.exceptions import WatchError

    store = make_store()
    sub, _ = planned(store)
    fails = [WatchError("changed")]

    class RacingPipeline(FakePipeline):
        def execute(self):
            if fails:
                self.queue = []
                raise fails.pop()
            return super().execute()
    store.kv.client.pipeline = lambda: RacingPipeline(store.kv.client)
    out = store.rotate_secret(sub["id"])
    assert fails == [] and store._load(sub["id"])["secret"] == out["secret"]


def test_subscriptions_are_capped_per_owner():
    store = make_store()
    for _ in range(MAX_SUBSCRIPTIONS_PER_OWNER):
        store.create("https://hooks.example.org/a", [Event.POST_MATCHED], owner="key_a")
    with pytest.raises(InvalidRequest, match=f"owner 'key_a' already has {MAX_SUBSCRIPTIONS_PER_OWNER}"):
        store.create("https://hooks.example.org/a", [Event.POST_MATCHED], owner="key_a")
    assert len(store.list()) == MAX_SUBSCRIPTIONS_PER_OWNER  # the refused one left nothing behind
    assert store.kv.client.scard(store.kv.key("webhook-owner", "key_a")) == MAX_SUBSCRIPTIONS_PER_OWNER
    other = store.create("https://hooks.example.org/b", [Event.POST_MATCHED], owner="key_b")
    assert set(other) == {"id", "url", "events", "languages", "min_score", "created_at", "secret"}
    store.delete(store.list()[0]["id"])  # key_a's oldest: a slot is free again
    store.create("https://hooks.example.org/a", [Event.POST_MATCHED], owner="key_a")
    with pytest.raises(InvalidRequest):
        store.create("https://hooks.example.org/a", [Event.POST_MATCHED], owner="key_a")


def test_subscriptions_without_owner_are_capped_for_the_deployment():
    store = make_store()
    for i in range(MAX_SUBSCRIPTIONS_PER_OWNER):
        store.create("https://hooks.example.org/x", [Event.POST_MATCHED], owner="key_a" if i % 2 else None)
    with pytest.raises(InvalidRequest, match="this deployment already has"):
        store.create("https://hooks.example.org/x", [Event.POST_MATCHED])
    assert len(store.list()) == MAX_SUBSCRIPTIONS_PER_OWNER


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


def test_min_score_reads_the_best_match_s_confidence_else_its_fused_score():
    from plugin.service.handlers import best_score

    assert best_score([]) is None
    assert best_score([{"score": 0.047, "confidence": 0.91}, {"score": 0.04, "confidence": 0.2}]) == 0.91
    assert best_score([{"score": 0.047, "confidence": None}]) == 0.047  # no confidence model
    assert wants({**SUB, "min_score": 0.9}, Event.POST_MATCHED, "en", best_score([{"score": 0.05, "confidence": 0.93}]))


def test_a_hanging_host_lookup_ends_with_the_attempt_s_deadline():
    import threading

    from plugin.service.webhooks import Unresolvable, resolve_within

    release = threading.Event()
    calls = []

    def hangs_after_the_first(host):  # answers when the subscription is made, then hangs
        calls.append(host)
        if len(calls) > 1:
            release.wait(10)
        return ["93.184.216.34"]
    transport = Recorder()
    store = make_store(transport, hangs_after_the_first, webhook_timeout_s=0.3)
    try:
        _, did = planned(store)
        outcome = store.attempt(did)
        with pytest.raises(Unresolvable, match="did not resolve within 0.2 s"):
            resolve_within(hangs_after_the_first, "slow.example.org", 0.2)
    finally:
        release.set()
    assert outcome.status is DeliveryStatus.PENDING and transport.calls == []  # retried later
    attempt = store.delivery(did)["attempts"][0]
    assert "did not resolve within 0.3 s" in attempt["error"] and attempt["duration_ms"] >= 300
    assert resolve_within(lambda host: ["93.184.216.34"], "fast.example.org", 1.0) == ["93.184.216.34"]
