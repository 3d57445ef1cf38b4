"""API key hashing, scopes and rate-limit windows: pure parts, by table."""
import pytest

from plugin.errors import BadInput
from plugin.service.keys import Scope, hash_key, window
from plugin.urls import redact_url


def test_hash_key_is_sha256_hex():
    assert hash_key("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


@pytest.mark.parametrize("now, size, expected", [
    (0, 60, (0, 60)), (59.9, 60, (0, 1)), (60, 60, (60, 60)), (125.5, 60, (120, 55)),
    (1700000000, 3600, (1699999200, 2800)),
])
def test_fixed_window(now, size, expected):
    assert window(now, size) == expected


@pytest.mark.parametrize("have, need, ok", [
    (Scope.WRITE, Scope.WRITE, True), (Scope.WRITE, Scope.READ, True),
    (Scope.READ, Scope.READ, True), (Scope.READ, Scope.WRITE, False),
])
def test_scopes(have, need, ok):
    assert have.allows(need) is ok


def test_scope_parse_lists_valid_values():
    assert Scope.parse("read") is Scope.READ and Scope.parse("admin") is Scope.ADMIN
    with pytest.raises(BadInput, match="read, write, admin"):
        Scope.parse("root")


@pytest.mark.parametrize("url, shown", [
    ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
    ("redis://:s3cret@cache.internal:6380/2", "redis://cache.internal:6380/2"),
    ("rediss://user:pw@cache/1?ssl_cert_reqs=none", "rediss://cache/1"),
])
def test_redact_url(url, shown):
    assert redact_url(url) == shown


def test_store_shows_and_warns_without_the_credentials(caplog):
    import logging

    from plugin.index.store import Store
    from plugin.settings import Settings

    with caplog.at_level(logging.WARNING, logger="plugin.index.store"):
        store = Store(Settings(opensearch_url="http://admin:s3cret@search.example:9200"))
    assert store.url == "http://search.example:9200"
    assert "plain http" in caplog.text and "s3cret" not in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="plugin.index.store"):
        Store(Settings(opensearch_url="https://search.example:9200", opensearch_user="u",
                       opensearch_password="p"))
    assert "plain http" not in caplog.text


def test_a_cluster_is_several_urls():
    from plugin.index.store import Store
    from plugin.settings import Settings

    settings = Settings(opensearch_url="http://a:9211/, http://admin:pw@b:9212")
    assert settings.opensearch_url == "http://a:9211,http://admin:pw@b:9212"
    store = Store(settings)
    assert store.url == "http://a:9211, http://b:9212"
    assert len(store.client.transport.connection_pool.connections) == 2


@pytest.mark.parametrize("remote, forwarded, trust, expected", [
    ("10.0.0.5", None, False, "10.0.0.5"),
    ("10.0.0.5", "1.2.3.4", False, "10.0.0.5"),                  # not trusted: a client could forge it
    ("10.0.0.5", "1.2.3.4", True, "1.2.3.4"),
    ("10.0.0.5", "6.6.6.6, 1.2.3.4", True, "1.2.3.4"),           # the proxy appended the last one
    ("10.0.0.5", " , ", True, "10.0.0.5"),
    (None, None, False, "unknown"),
])
def test_client_address(remote, forwarded, trust, expected):
    from plugin.service.keys import client_address

    assert client_address(remote, forwarded, trust) == expected


def test_key_names_refuse_control_characters():
    from plugin.service.keys import KeyStore
    from plugin.kv import KV
    from plugin.settings import Settings

    keys = KeyStore(KV(Settings(), client=object()), Settings())
    with pytest.raises(BadInput, match="control characters"):
        keys.create("ops\x1b[2Jfake line", Scope.READ)
