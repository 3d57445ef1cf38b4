"""Webhook signing, URL safety, backoff and subscription filters: pure functions, by table."""
import pytest

from plugin.errors import BadInput
from plugin.service.webhooks import (Event, backoff_delay, check_url, delivery_id, is_public_address, sign,
                             verify_signature, wants)

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
    ("https://internal.example.org/fs", (), "10.0.0.7"),
    ("https://split.example.org/fs", (), "127.0.0.1"),          # one bad address is enough
    ("http://localhost:9000/", (), "loopback"),
    ("http://localhost:9000/", ("localhost",), None),
    ("http://LOCALHOST./", ("localhost",), None),
    ("http://127.0.0.1:5000/", ("127.0.0.1",), None),
    ("http://internal.example.org/", ("127.0.0.1",), "10.0.0.7"),
    ("ftp://hooks.example.org/", (), "http or https"),
    ("file:///etc/passwd", (), "http or https"),
    ("https:///nohost", (), "no host"),
    ("https://u:p@hooks.example.org/", (), "credentials"),
    ("https://hooks.example.org:99999/", (), "malformed"),
])
def test_check_url(url, allowed, refusal):
    if refusal is None:
        assert check_url(url, allowed, RESOLVE) == url
    else:
        with pytest.raises(BadInput, match=refusal):
            check_url(url, allowed, RESOLVE)


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
