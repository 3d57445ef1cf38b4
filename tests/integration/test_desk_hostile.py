"""Issue 35's desk and review-API probes as tests, over the real OpenSearch and Redis: form-field
floods (item 2), CR/LF return targets (item 3), a race between two decision lists (item 4),
hostile JSON (item 5), a malformed cursor (item 6) and the sign-in's CSRF defence (item 11).
Review items are made with ``ReviewDesk.record_item``, the call a worker makes."""
from __future__ import annotations

import logging
import re
import threading
import uuid

import pytest

from plugin.service.keys import Scope
from plugin.search.result import Match
from tests.integration.conftest import problem_of

pytestmark = pytest.mark.integration

FLOOD = b"&".join([b"a=1"] * 10_001)


@pytest.fixture
def tenant(api_services):
    """A fresh tenant, its write key (the secret) and its key name."""
    name = f"dh-{uuid.uuid4().hex[:8]}"
    _, key = api_services.keys.create(f"ana-{name}", Scope.WRITE, name)
    return name, key


def items(api_services, tenant: str, n: int) -> list[str]:
    """``n`` pending review items without candidates (``not_a_claim`` decides them)."""
    ids = [f"dh-{uuid.uuid4().hex[:10]}" for _ in range(n)]
    for post_id in ids:
        assert api_services.review.record_item(tenant, post_id, "a post", "en", None, None,
                                               Match.from_dict({"matches": []}))
    return ids


def logged(api_services, tenant: str, post_id: str) -> list[dict]:
    """The post's decision log as the API shows it."""
    return [d.to_dict() for d in api_services.review.decisions_for(tenant, post_id)]


def sign_in(client, key: str, **form) -> object:
    page = client.get("/desk/signin")
    token = re.search(r'name="signin_token" value="([^"]+)"', page.get_data(as_text=True)).group(1)
    return client.post("/desk/signin", data={"signin_token": token, "api_key": key, **form})


def csrf(client) -> str:
    page = client.get("/desk/").get_data(as_text=True)
    return re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)


def anon_count(api_services) -> int:
    kv = api_services.kv
    return sum(int(kv.client.get(k) or 0) for k in kv.client.scan_iter(kv.key("ratelimit-anon", "127.0.0.1", "*")))


# -- item 2 ------------------------------------------------------------------------------------------
def test_ten_thousand_and_one_fields_on_sign_in_is_a_counted_413_without_a_traceback(
        app, api_services, caplog):
    client = app.test_client()
    before = anon_count(api_services)
    with caplog.at_level(logging.ERROR):
        resp = client.post("/desk/signin", data=FLOOD, content_type="application/x-www-form-urlencoded")
    assert resp.status_code == 413
    assert "10,000 fields" in resp.get_data(as_text=True)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert anon_count(api_services) > before  # the attempt counted against the address


def test_ten_thousand_and_one_fields_on_decide_and_bulk_is_a_413(app, api_services, tenant, caplog):
    client = app.test_client()
    assert sign_in(client, tenant[1]).status_code == 303
    with caplog.at_level(logging.ERROR):
        for path in ("/desk/decide", "/desk/bulk"):
            resp = client.post(path, data=FLOOD, content_type="application/x-www-form-urlencoded")
            assert resp.status_code == 413, path
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


# -- item 3 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("evil", ["/desk/\r\nSet-Cookie: x=1", "/desk/\n", "/desk/\u2028x"])
def test_a_control_character_in_back_goes_to_the_queue_and_the_decision_is_recorded_once(
        app, api_services, tenant, evil):
    client = app.test_client()
    (post_id,) = items(api_services, tenant[0], 1)
    assert sign_in(client, tenant[1]).status_code == 303
    token = csrf(client)
    resp = client.post("/desk/decide", data={"csrf_token": token, "post_id": post_id,
                                             "choice": "not_a_claim", "back": evil})
    assert resp.status_code == 303 and resp.headers["Location"] == "/desk/"
    assert len(logged(api_services, tenant[0], post_id)) == 1
    (other,) = items(api_services, tenant[0], 1)
    resp = client.post("/desk/bulk", data={"csrf_token": token, "pick": other, "bulk": "not_a_claim",
                                           "back": evil})
    assert resp.status_code in (303, 400)  # refused choices are a 400 before any write
    if resp.status_code == 303:
        assert resp.headers["Location"] == "/desk/"


def test_sign_in_with_a_control_character_in_next_lands_on_the_queue(app, tenant):
    client = app.test_client()
    resp = sign_in(client, tenant[1], next="/desk/\r\nLocation: https://evil.example/")
    assert resp.status_code == 303 and resp.headers["Location"] == "/desk/"
    assert client.get("/desk/").status_code == 200  # the session it wrote works


# -- item 4 ------------------------------------------------------------------------------------------
def _post(client, key, body):
    return client.post("/v1/review/decisions", json=body, headers={"Authorization": f"Bearer {key}"})


def test_a_race_found_while_writing_is_a_207_naming_what_was_not_recorded(
        app, api_services, tenant, monkeypatch):
    client = app.test_client()
    ids = items(api_services, tenant[0], 3)
    review, clock = api_services.review, api_services.review.clock

    def racing_clock() -> str:  # between this request's read and its write, another reviewer decides
        monkeypatch.setattr(review, "clock", clock)
        review.decide(tenant[0], "bo", [{"post_id": ids[1], "action": "not_a_claim"}])
        return clock()

    monkeypatch.setattr(review, "clock", racing_clock)
    resp = _post(client, tenant[1], [{"post_id": p, "action": "not_a_claim"} for p in ids])
    assert resp.status_code == 207, resp.data
    body = resp.get_json()
    assert body["partial"] is True
    assert sorted(d["post_id"] for d in body["decisions"]) == sorted([ids[0], ids[2]])
    (lost,) = body["not_recorded"]
    assert lost["post_id"] == ids[1] and lost["decision"]["actor"] == "bo" and "bo" in lost["reason"]
    assert [d["actor"] for d in logged(api_services, tenant[0], ids[1])] == ["bo"]


def test_two_racing_lists_each_get_201_207_or_409_and_every_answer_is_true(app, api_services, tenant):
    ids = items(api_services, tenant[0], 45)
    lists = {"a": ids[:40], "b": ids[5:]}  # 35 in common
    answers: dict[str, object] = {}
    go = threading.Barrier(2)

    def send(name: str) -> None:
        client = app.test_client()
        go.wait()
        answers[name] = _post(client, tenant[1], [{"post_id": p, "action": "not_a_claim"} for p in lists[name]])

    threads = [threading.Thread(target=send, args=(n,)) for n in lists]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    recorded: dict[str, str] = {}
    for name, resp in answers.items():
        assert resp.status_code in (201, 207, 409), resp.data
        body = resp.get_json()
        mine = body.get("decisions", []) if resp.status_code != 409 else []
        if resp.status_code == 409:
            assert problem_of(resp)["recorded"] == []
        elif resp.status_code == 201:
            assert not body["partial"] and not body["not_recorded"]
            assert sorted(d["post_id"] for d in mine) == sorted(lists[name])
        else:
            assert body["partial"] and body["not_recorded"]
            assert sorted([d["post_id"] for d in mine] + [n["post_id"] for n in body["not_recorded"]]) \
                == sorted(lists[name])
        for d in mine:
            assert d["post_id"] not in recorded, "an item recorded by both lists"
            recorded[d["post_id"]] = d["id"]
    for post_id in ids:  # the log holds exactly what the answers said was recorded
        assert [d["id"] for d in logged(api_services, tenant[0], post_id)] == (
            [recorded[post_id]] if post_id in recorded else [])


# -- items 5 and 6 -----------------------------------------------------------------------------------
@pytest.mark.parametrize("raw", [b"[" * 5000 + b"]" * 5000,
                                 b'{"post_id": "\\ud800", "action": "not_a_claim"}'])
def test_hostile_json_is_a_400_problem(client, tenant, raw):
    resp = client.post("/v1/review/decisions", data=raw, content_type="application/json",
                       headers={"Authorization": f"Bearer {tenant[1]}"})
    assert resp.status_code == 400 and resp.mimetype == "application/problem+json"


def test_a_null_cursor_is_a_422_that_names_no_index(client, tenant, api_services):
    resp = client.get("/v1/review?cursor=W251bGwsbnVsbF0", headers={"Authorization": f"Bearer {tenant[1]}"})
    assert resp.status_code == 422 and "Retry-After" not in resp.headers
    text = resp.get_data(as_text=True)
    assert api_services.settings.review_index not in text and "java" not in text.lower()


# -- item 11 -----------------------------------------------------------------------------------------
def test_sign_in_takes_only_a_server_issued_token_once_and_only_from_its_own_origin(app, tenant):
    client = app.test_client()
    page = client.get("/desk/signin").get_data(as_text=True)
    token = re.search(r'name="signin_token" value="([^"]+)"', page).group(1)
    cross = client.post("/desk/signin", data={"signin_token": token, "api_key": tenant[1]},
                        headers={"Origin": "http://evil.example", "Accept": "text/html"})
    assert cross.status_code == 403
    # a planted cookie and a token of the attacker's choosing (the old double submit) is refused
    client.set_cookie("fs_desk_signin", "planted", path="/desk")
    forged = client.post("/desk/signin", data={"signin_token": "planted", "api_key": tenant[1]})
    assert forged.status_code == 403
    page = client.get("/desk/signin").get_data(as_text=True)
    token = re.search(r'name="signin_token" value="([^"]+)"', page).group(1)
    fresh = {"signin_token": token, "api_key": tenant[1]}
    assert client.post("/desk/signin", data=fresh, headers={"Sec-Fetch-Site": "same-origin"}).status_code == 303
    assert client.post("/desk/signin", data=fresh).status_code == 403  # used once
