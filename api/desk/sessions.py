"""Desk sessions: server-side, in Redis, behind a random token in a cookie.

Signing in with an API key makes a session; the cookie holds only a random 256-bit token, and
Redis holds the session under the token's SHA-256 (a copy of Redis gives no usable cookies, as
``plugin.service.keys`` does for keys). A session ends after ``desk_session_ttl_s`` without a
request (each request starts the time again), when its reviewer signs out, or when the API key it
was made with is revoked (checked on every request, in the same round trip). Each session has
its own CSRF token, which every state-changing request must echo (``csrf_ok``); no server
secret is needed because nothing is signed, only compared.

Sign-in has no session yet, so its CSRF defence is its own (issue 35, item 11): a double-submit
cookie alone let anyone who can plant a cookie for the host (a sibling subdomain, plain HTTP)
sign a victim in as the attacker's key. Now (1) the sign-in form's token is issued by the
server and kept in Redis for ``SIGNIN_TTL_S`` under the digest of a pre-session id (the
``fs_desk_signin`` cookie), and one sign-in attempt consumes it (``SignInTokens``): a token the
server did not issue, or one already used, is refused; and (2) the POST must come from the
desk's own origin (``same_origin``: browsers send ``Sec-Fetch-Site`` and ``Origin`` with every
form POST, and a page on a sibling subdomain is not the same origin). (2) is what stops a planted
cookie, since an attacker can fetch a real pre-session and token pair; (1) keeps tokens
server-bound and single-use. A ``__Host-`` cookie would also stop planting, but needs
``Secure``, which the plain-HTTP localhost desk cannot have (``docs/desk.md``).
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone

from plugin.service.keys import ApiKey, Scope
from plugin.kv import KV

#: The session cookie, and the sign-in form's pre-session cookie (login CSRF: ``SignInTokens``).
COOKIE = "fs_desk"
SIGNIN_COOKIE = "fs_desk_signin"
#: how long a sign-in form stays usable (its token's life in Redis, and its cookie's)
SIGNIN_TTL_S = 600


@dataclass(frozen=True)
class DeskSession:
    token: str
    key_id: str
    #: the API key's name: the actor of every decision made in this session
    name: str
    tenant: str
    scope: Scope
    csrf: str
    created_at: str

    @property
    def may_decide(self) -> bool:
        return self.scope.allows(Scope.WRITE)


def new_token() -> str:
    return secrets.token_urlsafe(32)


def csrf_ok(expected: str | None, sent: str | None) -> bool:
    """Whether ``sent`` is the session's CSRF token (pure; constant time). Empty never is."""
    return bool(expected) and bool(sent) and hmac.compare_digest(expected.encode(), sent.encode())


def same_origin(host: str, origin: str | None, fetch_site: str | None) -> bool:
    """Whether a POST to ``host`` came from a page of the same origin (pure), by what the browser
    says: ``Sec-Fetch-Site`` (``same-origin``, or ``none`` for one the user typed) when sent, else
    ``Origin``'s host. Neither header (a script, curl) is not a browser that could be led into a
    cross-site POST, so it passes; ``Origin: null`` (a sandboxed or privacy-stripped page) does
    not. Only the host is compared, not the scheme, so a TLS-terminating proxy in front of a
    plain-HTTP desk does not refuse its own pages."""
    if fetch_site is not None:
        return fetch_site in ("same-origin", "none")
    if origin is None:
        return True
    scheme, sep, rest = origin.partition("://")
    return bool(sep) and scheme in ("http", "https") and rest.lower() == host.lower()


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class SessionStore:
    def __init__(self, kv: KV, ttl_s: int) -> None:
        self.kv = kv
        self.ttl_s = ttl_s

    def _key(self, token: str) -> str:
        return self.kv.key("desk-session", _digest(token))

    def create(self, key: ApiKey) -> DeskSession:
        session = DeskSession(token=new_token(), key_id=key.id, name=key.name, tenant=key.tenant,
                              scope=key.scope, csrf=new_token(),
                              created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
        name = self._key(session.token)
        pipe = self.kv.client.pipeline()
        pipe.hset(name, mapping={"key_id": session.key_id, "name": session.name,
                                 "tenant": session.tenant, "scope": session.scope.value,
                                 "csrf": session.csrf, "created_at": session.created_at})
        pipe.expire(name, self.ttl_s)
        self.kv.call("create desk session", pipe.execute)
        return session

    def get(self, token: str | None, *, touch: bool = True) -> DeskSession | None:
        """The live session of ``token`` (its idle time restarted, unless ``touch`` is false: a
        page polling by itself is not a reviewer at work), or ``None``: unknown, expired, signed
        out, or made with a key that has since been revoked (then it is deleted)."""
        if not token or len(token) > 100:
            return None
        name = self._key(token)
        pipe = self.kv.client.pipeline()
        pipe.hgetall(name)
        if touch:
            pipe.expire(name, self.ttl_s)  # a no-op on a key that is gone
        found = self.kv.call("read desk session", pipe.execute)[0]
        if not found:
            return None
        if not self.kv.call("check api key", self.kv.client.hexists, self.kv.key("apikeys"), found["key_id"]):
            self.kv.call("end desk session", self.kv.client.delete, name)
            return None
        return DeskSession(token=token, key_id=found["key_id"], name=found["name"],
                           tenant=found["tenant"], scope=Scope(found["scope"]), csrf=found["csrf"],
                           created_at=found["created_at"])

    def flash(self, token: str, message: str) -> None:
        """A message for the next page this session renders (after a redirect)."""
        self.kv.call("desk flash", self.kv.client.hset, self._key(token), "flash", message[:500])

    def pop_flash(self, token: str) -> str | None:
        pipe = self.kv.client.pipeline()
        pipe.hget(self._key(token), "flash")
        pipe.hdel(self._key(token), "flash")
        message, _ = self.kv.call("desk flash", pipe.execute)
        return message or None

    def end(self, token: str) -> None:
        self.kv.call("end desk session", self.kv.client.delete, self._key(token))


class SignInTokens:
    """Server-bound, single-use sign-in form tokens: ``issue`` keeps a new token under the
    digest of a new pre-session id for ``SIGNIN_TTL_S``; ``consume`` takes it back (deleting it,
    whatever the attempt's outcome) and says whether the form sent it."""

    def __init__(self, kv: KV, ttl_s: int = SIGNIN_TTL_S) -> None:
        self.kv = kv
        self.ttl_s = ttl_s

    def _key(self, pre: str) -> str:
        return self.kv.key("desk-signin", _digest(pre))

    def issue(self) -> tuple[str, str]:
        """``(pre-session id for the cookie, token for the form)``."""
        pre, token = new_token(), new_token()
        self.kv.call("issue sign-in token", self.kv.client.set, self._key(pre), token, ex=self.ttl_s)
        return pre, token

    def consume(self, pre: str | None, sent: str | None) -> bool:
        if not pre or len(pre) > 100:
            return False
        expected = self.kv.call("check sign-in token", self.kv.client.getdel, self._key(pre))
        return csrf_ok(expected, sent)
