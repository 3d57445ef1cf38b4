"""The desk's CSRF comparison and session records (pure parts; the Redis store is exercised by
tests/browser/)."""
from __future__ import annotations

import pytest

from api.desk.sessions import DeskSession, csrf_ok, new_token
from plugin.service.keys import Scope


@pytest.mark.parametrize(("expected", "sent", "ok"), [
    ("abc", "abc", True), ("abc", "abd", False), ("abc", "", False), ("abc", None, False),
    ("", "", False), (None, None, False), ("", "x", False),
])
def test_csrf_ok(expected, sent, ok):
    assert csrf_ok(expected, sent) is ok


def test_tokens_are_random_and_long():
    tokens = {new_token() for _ in range(100)}
    assert len(tokens) == 100 and all(len(t) >= 43 for t in tokens)


@pytest.mark.parametrize(("scope", "may"), [(Scope.READ, False), (Scope.WRITE, True), (Scope.ADMIN, True)])
def test_only_write_keys_decide(scope, may):
    s = DeskSession(token="t", key_id="key_1", name="Ana", tenant="t1", scope=scope, csrf="c", created_at="now")
    assert s.may_decide is may


@pytest.mark.parametrize(("origin", "fetch_site", "ok"), [
    (None, None, True),                                   # not a browser (curl, a script)
    ("http://desk.example:8000", None, True), ("https://desk.example:8000", None, True),
    ("http://evil.example", None, False), ("http://sub.desk.example:8000", None, False),
    ("null", None, False), ("desk.example:8000", None, False),
    (None, "same-origin", True), (None, "none", True),
    ("http://desk.example:8000", "same-site", False),     # a sibling subdomain planting the cookie
    (None, "cross-site", False),
])
def test_same_origin(origin, fetch_site, ok):
    from api.desk.sessions import same_origin

    assert same_origin("desk.example:8000", origin, fetch_site) is ok
