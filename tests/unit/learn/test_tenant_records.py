"""TenantRecords over a Redis stand-in with the few commands it uses (the stores built on it are
tested against real Redis in tests/integration/test_recalibration.py and test_reranker_update.py)."""
from plugin.learn.tenant_records import TenantRecords


class FakeRedis:
    def __init__(self):
        self.data = {}

    def get(self, k):
        return self.data.get(k)

    def set(self, k, v):
        self.data[k] = v

    def delete(self, k):
        self.data.pop(k, None)

    def lpush(self, k, v):
        self.data.setdefault(k, []).insert(0, v)

    def ltrim(self, k, a, b):
        self.data[k] = self.data.get(k, [])[a:b + 1]

    def lrange(self, k, a, b):
        return list(self.data.get(k, []))

    def pipeline(self, transaction=True):
        redis, calls = self, []

        class Pipe:
            def __getattr__(self, name):
                return lambda *args: calls.append((name, args))

            def execute(self):
                return [getattr(redis, name)(*args) for name, args in calls]
        return Pipe()


class FakeKV:
    def __init__(self):
        self.client = FakeRedis()

    def key(self, *parts):
        return ":".join(("t", *parts))

    def call(self, what, fn, *args):
        return fn(*args)


def test_replace_keeps_a_capped_history_and_this_process_sees_its_write():
    kv = FakeKV()
    records = TenantRecords(kv, "calibration", cache_s=60.0, history_keep=2)
    assert records.get("a") is None  # cached as absent for 60 s ...
    kv.client.set(records.key("a", "attempt"), "x")
    for n in range(4):
        records.replace("a", {"n": n}, also_delete=("attempt",))
    assert records.get("a") == {"n": 3}  # ... but a replace in this process is seen at once
    assert [h["n"] for h in records.history("a")] == [2, 1]
    assert kv.client.get(records.key("a", "attempt")) is None
    assert records.get("b") is None and records.history("b") == []


def test_replaced_none_is_what_the_history_shows_for_a_first_record():
    records = TenantRecords(FakeKV(), "reranker", cache_s=0.0, history_keep=10)
    records.replace("a", {"version": "v1"}, replaced_none={"packaged": True})
    assert records.history("a") == [{"packaged": True}]


def test_logs_are_capped_newest_first_and_call_forgets_the_cache():
    kv = FakeKV()
    records = TenantRecords(kv, "reranker", cache_s=60.0, history_keep=10)
    for n in range(5):
        records.append("a", "attempts", {"n": n}, keep=3)
    assert [e["n"] for e in records.entries("a", "attempts")] == [4, 3, 2]
    records.replace("a", {"v": 1})
    records.call("drop", lambda: kv.client.delete(records.key("a", "current")), "a")
    assert records.get("a") is None
