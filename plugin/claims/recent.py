"""The last few seconds of a tenant's joined posts, for the join (in Redis, through ``plugin.kv``).

The posts index answers the join's kNN only after its next refresh (about a second), so two
re-posts a second apart started two claims; a burst of re-posts (a viral rumour, a tipline's users
asking at once) met that every time. Each joined post is pushed here with its vector
(``RecentPosts.push``, after its claim counted it) and the join reads the ones of the last
``WINDOW_S`` beside the kNN (``ClaimStore.earlier``), compared in the process; a claim's trending
count adds its posts here to what the index shows (``ClaimStore.posts_since``). Bounded: at most
``MAX`` entries a tenant, ~1 KB each (the vector as float16).
"""
from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from plugin.claims.cluster import Earlier, PostSignals
from plugin.kv import KV
from plugin.search.duplicates import post_words

#: how long a post stays here: well past a refresh interval (1 s) and a busy node's delay
WINDOW_S = 10.0
#: the most entries a tenant keeps (the newest)
MAX = 64


def pack(vector: Sequence[float]) -> str:
    return base64.b64encode(np.asarray(vector, dtype=np.float16).tobytes()).decode()


def unpack(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype=np.float16).astype(np.float32)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    denom = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / denom if denom else 0.0


class RecentPosts:
    def __init__(self, kv: KV, *, clock: Callable[[], float] = time.time) -> None:
        self.kv = kv
        self.clock = clock

    def push(self, tenant: str, post: PostSignals, text: str, claim_id: str, vector: Sequence[float]) -> None:
        entry = {"post_id": post.post_id, "text": text[:2000], "answer": post.answer,
                 "answer_confidence": post.answer_confidence, "image_hash": post.image_hash,
                 "kept_out": sorted(post.kept_out), "claim_id": claim_id, "v": pack(vector), "at": self.clock()}
        key = self.kv.key("claimbuf", tenant)
        pipe = self.kv.client.pipeline()
        pipe.lpush(key, json.dumps(entry))
        pipe.ltrim(key, 0, MAX - 1)
        pipe.expire(key, int(WINDOW_S * 3))
        self.kv.call("push a recent post", pipe.execute)

    def of_claims(self, tenant: str, claim_ids: Sequence[str]) -> list[str]:
        """The ids of the tenant's posts of the last ``WINDOW_S`` that joined one of ``claim_ids``
        (the trending count adds them to what the posts index shows)."""
        wanted, since = set(claim_ids), self.clock() - WINDOW_S
        return [e["post_id"] for e in map(json.loads, self._read(tenant)) if e["at"] >= since and e["claim_id"] in wanted]

    def _read(self, tenant: str) -> list[str]:
        return self.kv.call("read recent posts", self.kv.client.lrange, self.kv.key("claimbuf", tenant), 0, MAX - 1)

    def earlier(self, tenant: str, vector: Sequence[float]) -> list[Earlier]:
        """The tenant's posts of the last ``WINDOW_S`` as the join sees them, with their cosine
        to ``vector``."""
        raw = self._read(tenant)
        since, mine = self.clock() - WINDOW_S, np.asarray(vector, dtype=np.float32)
        out = []
        for item in raw:
            e: dict[str, Any] = json.loads(item)
            if e["at"] < since:
                continue
            signals = PostSignals(e["post_id"], post_words(e.get("text")), e.get("answer"), e.get("answer_confidence"),
                                  e.get("image_hash"), frozenset(e.get("kept_out") or ()))
            out.append(Earlier(signals, e["claim_id"], cosine(mine, unpack(e["v"]))))
        return out
