"""Webhook signing, backoff and subscription filters: pure functions, by table. Then the
subscription store over an in-memory stand-in for Redis (``plugin.service.webhooks``); where
webhooks may go is ``test_outbound.py``, the transport ``test_outbound_post.py``."""
import threading
import time

import pytest

from plugin.errors import BadInput, InvalidRequest, NotFound
from plugin.service import webhooks
from plugin.kv import KV
from plugin.net.outbound import DeliveryError, Reply, Unresolvable, resolve_within
from plugin.service.signing import (delivery_headers, rotated, sign, signature_header, signing_secrets,
                                    verify_signature)
from plugin.events import Event, wants
from plugin.service.webhooks import (MAX_SUBSCRIPTIONS_PER_OWNER, DeliveryStatus, WebhookStore, backoff_delay,
                                     capacity_error, delivery_id)
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
            raise Unresolvable(f"webhook host {host!r} does not resolve: outage")
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


def test_min_score_reads_the_best_match_s_confidence_else_its_fused_score():
    from plugin.service.handlers import best_score

    from plugin.search.result import Match

    def best(*matches):
        return best_score(Match.from_dict({"matches": [{"id": f"f{i}", "rank": i, **m} for i, m in enumerate(matches, 1)]}))

    assert best() is None
    assert best({"score": 0.047, "confidence": 0.91}, {"score": 0.04, "confidence": 0.2}) == 0.91
    assert best({"score": 0.047, "confidence": None}) == 0.047  # no confidence model
    assert wants({**SUB, "min_score": 0.9}, Event.POST_MATCHED, "en", best({"score": 0.05, "confidence": 0.93}))


def test_a_hanging_host_lookup_ends_with_the_attempt_s_deadline():
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
