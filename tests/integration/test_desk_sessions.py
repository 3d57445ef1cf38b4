"""Desk sessions in real Redis: a reviewer's request restarts the idle time, a page's own poll
does not (an open tab left alone still expires)."""
from __future__ import annotations

import pytest

from api.desk.sessions import SessionStore
from plugin.service.keys import ApiKey, Scope
from plugin.kv import KV

pytestmark = pytest.mark.integration


def test_polls_do_not_keep_an_idle_session_alive(settings):
    kv = KV(settings)
    key = ApiKey(id="key_s", name="Ana", scope=Scope.WRITE, created_at="now", tenant="t1")
    kv.call("store key", kv.client.hset, kv.key("apikeys"), key.id, "{}")
    store = SessionStore(kv, ttl_s=600)
    made = store.create(key)
    name = store._key(made.token)
    try:
        kv.client.expire(name, 50)
        assert store.get(made.token, touch=False).name == "Ana"
        assert kv.client.ttl(name) <= 50
        assert store.get(made.token).csrf == made.csrf
        assert kv.client.ttl(name) > 500
        store.end(made.token)
        assert store.get(made.token, touch=False) is None
    finally:
        kv.client.delete(name)
        kv.client.hdel(kv.key("apikeys"), key.id)
