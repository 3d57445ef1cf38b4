"""The review desk's JSON, byte for byte (key order included): the API's item, queue and decision
answers (201, 207, 409), the ``match.confirmed`` / ``match.rejected`` / ``match.undone`` webhook
payloads, and the stored documents, while review items and decisions change type (issue 36).

Pure: a ``ReviewDesk`` over an in-memory store, the real API routes over it through Flask's test
client, the real notifier over a recording webhook store; fixed clock and decision ids.
Regenerate only for an intended change: ``FACTSIEVE_UPDATE_SNAPSHOTS=1 pytest this file``."""
from __future__ import annotations

import copy
import itertools
import json
import os
import secrets
from pathlib import Path
from types import SimpleNamespace

import pytest

from plugin.errors import Conflict
from plugin.image.model import ImageAnalysis, OcrResult
from plugin.image.thumb import Thumbnail
from plugin.review.desk import ReviewDesk
from plugin.review.events import notifier
from plugin.search.result import Match
from plugin.service.keys import ApiKey, Scope
from plugin.settings import Settings

SNAPSHOT = Path(__file__).parent / "snapshots" / "review_json.json"
TENANT = "t"
SETTINGS = Settings(redis_url="redis://127.0.0.1:9/0", opensearch_url="http://127.0.0.1:9")


class FakeStore:
    """What ``ReviewDesk`` asks of ``Store``, in memory. ``races``: item ids whose next bulk
    write another request wins (the stored item then carries ``winner`` as its last decision)."""

    def __init__(self) -> None:
        self.docs: dict[str, dict[str, dict]] = {}
        self.seq = itertools.count(1)
        self.races: dict[str, dict] = {}

    def _doc(self, index, doc_id, body):
        self.docs.setdefault(index, {})[doc_id] = {"_id": doc_id, "_seq_no": next(self.seq),
                                                   "_primary_term": 1, "_source": copy.deepcopy(body)}

    def put(self, index, doc_id, body, *, refresh=False, create=False, if_seq_no=None, if_primary_term=None):
        have = self.docs.get(index, {}).get(doc_id)
        if (create and have) or (if_seq_no is not None and (have or {}).get("_seq_no") != if_seq_no):
            raise Conflict(f"{doc_id} exists or changed")
        self._doc(index, doc_id, body)

    def mget(self, index, ids, *, source):
        out = {}
        for i in ids:
            have = self.docs.get(index, {}).get(i)
            if have is not None:
                out[i] = {**have, "_source": {k: copy.deepcopy(v) for k, v in have["_source"].items()
                                              if k in source}}
        return out

    def bulk(self, actions, *, chunk_size=200, refresh=False):
        answers = []
        for a in actions:
            index, doc_id = a["_index"], a["_id"]
            if doc_id in self.races:
                winner = self.races.pop(doc_id)
                have = self.docs[index][doc_id]["_source"]
                self._doc(index, doc_id, {**have, "status": winner["to_status"], "decided_at": winner["at"],
                                          "decided_by": winner["actor"], "last_decision": winner})
                answers.append((False, {"index": {"_id": doc_id, "status": 409}}))
                continue
            self.put(index, doc_id, a["_source"], create=a["_op_type"] == "create")
            answers.append((True, {a["_op_type"]: {"_id": doc_id, "status": 201}}))
        return iter(answers)

    def search(self, index, body):
        hits = list(self.docs.get(index, {}).values())
        if index == SETTINGS.decisions_index:  # decisions_body: one post's, oldest first
            post_id = body["query"]["bool"]["filter"][1]["term"]["post_id"]
            hits = sorted((h for h in hits if h["_source"]["post_id"] == post_id),
                          key=lambda h: (h["_source"]["at"], h["_source"]["id"]))
            return {"hits": {"hits": copy.deepcopy(hits)}}
        tenant = body["query"]["bool"]["filter"][0]["term"]["tenant"]
        hits = [h for h in hits if h["_source"]["tenant"] == tenant]
        out = []
        for h in sorted(hits, key=lambda h: (h["_source"]["created_at"], h["_source"]["post_id"])):
            src = copy.deepcopy(h["_source"])
            if src.get("last_decision"):
                src["last_decision"].pop("candidates", None)  # _source.excludes
            out.append({**h, "_source": src, "sort": [int(src["created_at"][17:19]), src["post_id"]]})
        aggs = {"status": {"v": {"buckets": [{"key": "pending", "doc_count": 3}]}},
                "lang": {"v": {"buckets": [{"key": "en", "doc_count": 4}, {"key": "es", "doc_count": 1}]}},
                "confidence": {"v": {"buckets": {"low": {"doc_count": 1}, "medium": {"doc_count": 1},
                                                 "high": {"doc_count": 2}}}},
                "age": {"v": {"buckets": {"day": {"doc_count": 5}, "week": {"doc_count": 0},
                                          "older": {"doc_count": 0}}}}}
        return {"hits": {"hits": out[:body["size"]]}, "aggregations": aggs}


class Webhooks:
    """The webhook store's planning, recording each payload as its delivery body writes it."""

    def __init__(self) -> None:
        self.planned: list[tuple[str, str]] = []

    def all(self, tenant):
        return [{"id": "sub1", "url": "https://hooks.example/x", "languages": None,
                 "events": ["match.confirmed", "match.rejected", "match.undone"]}]

    def plan(self, sub, event, data, dedupe_key):
        self.planned.append((f"{event.value} {dedupe_key}", json.dumps(
            data, ensure_ascii=False, separators=(",", ":"), default=str)))
        return f"del_{len(self.planned)}"


class Keys:
    limit = 1000

    def authenticate(self, token):
        return ApiKey(id="k1", name="ana", scope=Scope.WRITE, created_at="2024", tenant=TENANT)

    def hit(self, key_id):
        return 999, 60


def _match(cands: list[dict], reranked: bool = False, config: str = "hybrid-rrf") -> Match:
    return Match.from_dict({"lang": "en", "config": config, "reranked": reranked, "matches": cands},
                           versions={"retrieval_config": config, "embedding": "e5-small", "calibrator": "cal1"})


def _cand(i: int, conf: float | None, **extra) -> dict:
    return {"id": f"fc{i}", "score": round(1 / i, 6), "rank": i, "confidence": conf, "claim": f"claim {i} «ü»",
            "rating": "False", "publisher": "P", "published_at": f"2024-01-0{i}", "url": f"https://x/{i}",
            "lang": "en", "explain": {"bm25:post": {"rank": i, "score": 3.5}, "dense:post": {"rank": i, "score": 0.8}},
            **extra}


def _record(desk: ReviewDesk) -> None:
    image = ImageAnalysis(sha256="ab" * 32, width=640, height=480, format="JPEG", pdq=None,
                          ocr=OcrResult(text="SAID IT", model="eng", lang="en", confidence=90.0,
                                        pass_name="image", text_share=0.2),
                          thumbnail=Thumbnail(data=b"\xff\xd8jpeg", width=160, height=120))
    p1 = _match([_cand(1, 0.93, signals=[{"signal": "same-image", "distance": 4}, {"signal": "ocr"}],
                       explain={"same-image": {"rank": 1, "score": 4.0}, "ocr:bm25:post": {"rank": 1, "score": 2.0},
                                "rerank": {"score": 0.97}}, confidence_packaged=0.88),
                 _cand(2, 0.61, signals=[{"signal": "text"}]), _cand(3, 0.2)], reranked=True)
    desk.record_item(TENANT, "p1", "Look: <b>5G</b> spreads covid", "en", "2024-02-01", "https://social/p1",
                     p1, image=image)
    desk.record_item(TENANT, "p2", "la vacuna cambia el ADN", "es", None, None, _match([_cand(1, 0.7), _cand(2, 0.5)]))
    desk.record_item(TENANT, "p3", "no one found this", "en", "2024-02-03", None, _match([], config=""))
    desk.record_item(TENANT, "p4", "a race lost", "en", None, None, _match([_cand(1, None)]))
    desk.record_item(TENANT, "p5", "a race lost whole", "en", None, None, _match([_cand(1, 0.55)]))
    desk.record_item(TENANT, "p6", "confirmed by a rule", "en", None, None, _match([_cand(1, 0.99)]))
    desk.record_item("other", "p1", "another tenant's post", "en", None, None, _match([_cand(1, 0.9)]))


def _scenario(monkeypatch) -> dict[str, str]:
    from api import create_app

    ticks, ids = itertools.count(), itertools.count(1)
    monkeypatch.setattr(secrets, "token_hex", lambda n: f"{next(ids):0{2 * n}d}")
    store, hooks = FakeStore(), Webhooks()
    desk = ReviewDesk(store, SETTINGS, notify=notifier(hooks, lambda did: None),
                      clock=lambda: f"2024-03-01T00:00:{next(ticks):02d}.000+00:00")
    desk._ready = True  # no index to install
    store._doc(SETTINGS.index, "fc-by-hand", {"id": "fc-by-hand"})
    _record(desk)
    app = create_app(SETTINGS, services=SimpleNamespace(keys=Keys(), review=desk, settings=SETTINGS),
                     celery=object())
    client = app.test_client()
    out: dict[str, str] = {}

    def call(name, method, url, body=None):
        resp = client.open(url, method=method, json=body, headers={"Authorization": "Bearer x"})
        out[name] = f"{resp.status_code} {resp.get_data(as_text=True)}"

    call("queue", "GET", "/v1/review?status=any&sort=oldest")
    call("queue-page", "GET", "/v1/review?limit=2")
    call("decide-201", "POST", "/v1/review/decisions", [
        {"post_id": "p1", "action": "confirm", "factcheck_id": "fc2", "note": "<i>right</i> ✓"},
        {"post_id": "p2", "action": "reject"}])
    call("undo-201", "POST", "/v1/review/decisions", {"post_id": "p1", "action": "undo"})
    call("decided-409", "POST", "/v1/review/decisions", {"post_id": "p2", "action": "confirm"})
    # another request's decision, as the log stores it (``decision_record``'s key order)
    stored = next(h["_source"] for h in store.docs[SETTINGS.decisions_index].values()
                  if h["_source"]["post_id"] == "p2")
    winner = {**stored, "id": "dec_winner", "post_id": "p4", "actor": "bo", "action": "none",
              "to_status": "no_match"}
    store.races["rv_" + _item_hash("p4")] = winner
    call("partial-207", "POST", "/v1/review/decisions", [
        {"post_id": "p3", "action": "manual", "factcheck_id": "fc-by-hand"},
        {"post_id": "p4", "action": "none", "version": json.loads(out["queue"][4:])["items"][3]["version"]}])
    store.races["rv_" + _item_hash("p5")] = {**winner, "id": "dec_winner2", "post_id": "p5"}
    call("race-409", "POST", "/v1/review/decisions", {"post_id": "p5", "action": "confirm"})
    call("reject-one-201", "POST", "/v1/review/decisions",
         {"post_id": "p1", "action": "reject", "factcheck_id": "fc1"})
    desk.decide(TENANT, "factsieve-auto", [{"post_id": "p6", "action": "confirm"}], origin="auto")
    for p in ("p1", "p2", "p3", "p4", "p6"):
        call(f"item-{p}", "GET", f"/v1/review/{p}")
    call("history", "GET", "/v1/review?status=any&sort=decided")
    for n, (what, body) in enumerate(hooks.planned):
        out[f"webhook-{n} {what}"] = body
    for index, docs in sorted(store.docs.items()):
        for doc_id, hit in docs.items():
            out[f"stored {index} {hit['_source'].get('post_id', doc_id)} {doc_id}"] = json.dumps(
                hit["_source"], ensure_ascii=False)
    return out


def _item_hash(post_id: str) -> str:
    from plugin.review.desk import item_id

    return item_id(TENANT, post_id)[3:]


def test_review_json_is_byte_compatible(monkeypatch):
    got = _scenario(monkeypatch)
    if os.environ.get("FACTSIEVE_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        pytest.fail("snapshot written: review and commit it")
    want = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert list(got) == list(want)
    for name in want:
        assert got[name] == want[name], name


def test_a_decided_item_keeps_its_thumbnail(monkeypatch):
    """A decision writes the item back whole: the desk's thumbnail (which the API never shows)
    must survive it, or the item's page loses its picture once decided."""
    stored = json.loads(_scenario(monkeypatch)["stored review p1 rv_" + _item_hash("p1")])
    assert stored["status"] == "rejected" and stored["image_thumbnail"] == "/9hqcGVn"
