"""The last seconds' posts the join reads beside the index (``plugin.claims.recent``)."""
from __future__ import annotations

import numpy as np

from plugin.claims.cluster import PostSignals
from plugin.claims.recent import MAX, WINDOW_S, RecentPosts, cosine, pack, unpack


class FakeKV:
    """Just enough of ``plugin.kv.KV`` (a list per key)."""

    def __init__(self) -> None:
        self.lists: dict[str, list[str]] = {}
        kv = self

        class Pipe:
            def __init__(self) -> None:
                self.ops: list = []

            def lpush(self, key, value):
                self.ops.append(lambda: kv.lists.setdefault(key, []).insert(0, value))

            def ltrim(self, key, start, stop):
                self.ops.append(lambda: kv.lists.__setitem__(key, kv.lists.get(key, [])[start:stop + 1]))

            def expire(self, key, seconds):
                self.ops.append(lambda: None)

            def execute(self):
                for op in self.ops:
                    op()

        class Client:
            def pipeline(self):
                return Pipe()

            def lrange(self, key, start, stop):
                return kv.lists.get(key, [])[start:stop + 1]

        self.client = Client()

    def key(self, *parts: str) -> str:
        return ":".join(parts)

    def call(self, what, fn, *args, **kwargs):
        return fn(*args, **kwargs)


def test_a_vector_survives_packing_to_within_float16():
    v = np.random.default_rng(0).normal(size=384).astype(np.float32)
    v /= np.linalg.norm(v)
    assert cosine(unpack(pack(v.tolist())), v) > 0.9999
    assert len(pack(v.tolist())) < 1100  # ~1 KB an entry


def test_the_join_sees_the_last_seconds_posts_with_their_cosine_and_forgets_older_ones():
    now = [1000.0]
    recent = RecentPosts(FakeKV(), clock=lambda: now[0])
    a = np.zeros(4, dtype=np.float32)
    a[0] = 1.0
    recent.push("t", PostSignals("p1", frozenset(), "f1", 0.9, None, frozenset({"c0"})), "5G spreads it", "c1", a.tolist())
    [e] = recent.earlier("t", [1.0, 0.0, 0.0, 0.0])
    assert (e.post.post_id, e.claim_id, e.post.answer, e.post.kept_out) == ("p1", "c1", "f1", frozenset({"c0"}))
    assert abs(e.similarity - 1.0) < 1e-3 and e.post.words  # the words, for the same-claim test
    assert recent.earlier("other", a.tolist()) == []  # another tenant's
    now[0] += WINDOW_S + 1
    assert recent.earlier("t", a.tolist()) == []
    for i in range(MAX + 5):
        recent.push("t", PostSignals(f"p{i}", frozenset(), None, None), "x", "c", a.tolist())
    assert len(recent.earlier("t", a.tolist())) == MAX


def test_a_claims_last_seconds_posts_are_named_for_its_trending_count():
    now = [1000.0]
    recent = RecentPosts(FakeKV(), clock=lambda: now[0])
    v = [1.0, 0.0, 0.0, 0.0]
    for post, claim in (("p1", "c1"), ("p2", "c2"), ("p3", "c1"), ("p4", "c9")):
        recent.push("t", PostSignals(post, frozenset(), None, None), "x", claim, v)
    assert sorted(recent.of_claims("t", ["c1"])) == ["p1", "p3"]
    assert sorted(recent.of_claims("t", ["c1", "c9"])) == ["p1", "p3", "p4"]  # a claim and one merged into it
    assert recent.of_claims("other", ["c1"]) == []
    now[0] += WINDOW_S + 1  # by now the index shows them
    assert recent.of_claims("t", ["c1"]) == []
