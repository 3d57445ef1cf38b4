"""URL keys and domains for exclusions."""
import pytest

from plugin.evidence.urls import domain_key, domain_of, parent_domains, unwrap, url_key


@pytest.mark.parametrize("url, expected", [
    ("https://www.Example.org/a/b/", "example.org/a/b"),
    ("http://example.org/a/b#frag", "example.org/a/b"),
    ("https://example.org/a?x=1", "example.org/a?x=1"),
    ("https://example.org/A", "example.org/A"),
    ("https://web.archive.org/web/20201130144023/https://checkyourfact.com/2020/11/03/fc/",
     "checkyourfact.com/2020/11/03/fc"),
    ("https://web.archive.org/web/20201130144023id_/http://www.checkyourfact.com/x", "checkyourfact.com/x"),
    ("web.archive.org/web/2020/example.org/page", "example.org/page"),
])
def test_url_key(url, expected):
    assert url_key(url) == expected


def test_unwrap_nested_archive_urls():
    inner = "https://example.org/x"
    assert unwrap(f"https://web.archive.org/web/1/https://web.archive.org/web/2/{inner}") == inner


@pytest.mark.parametrize("url, expected", [
    ("https://www.snopes.com/fact-check/x", "snopes.com"),
    ("https://web.archive.org/web/2020/https://www.snopes.com/x", "snopes.com"),
    ("https://news.bbc.co.uk/a", "news.bbc.co.uk"),
])
def test_domain_of(url, expected):
    assert domain_of(url) == expected


@pytest.mark.parametrize("given, expected", [
    ("WWW.Snopes.com", "snopes.com"), ("snopes.com/", "snopes.com"),
    ("https://www.snopes.com/x", "snopes.com"), ("localhost", "localhost"),
])
def test_domain_key(given, expected):
    assert domain_key(given) == expected


@pytest.mark.parametrize("domain, expected", [
    ("news.bbc.co.uk", ["news.bbc.co.uk", "bbc.co.uk", "co.uk"]),
    ("snopes.com", ["snopes.com"]),
    ("localhost", ["localhost"]),
    (None, []),
])
def test_parent_domains(domain, expected):
    assert parent_domains(domain) == expected
