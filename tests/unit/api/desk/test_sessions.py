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
