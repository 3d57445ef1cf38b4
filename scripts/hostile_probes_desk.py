"""Hostile probes of the desk and the review API (issue 35, items 2–6 and 11): 10,001 form
fields on sign-in and decide, CR/LF return targets, two decision lists racing, hostile JSON, a
null cursor, a cross-origin sign-in. Review items are made with ``ReviewDesk.record_item`` (the
worker's call), so no probe waits for a match."""
from __future__ import annotations

import re
import threading
import time
import uuid

import requests

from hostile_rig import CLIENT_TIMEOUT_S, HostileRig

from plugin.search.result import Match

FLOOD = "&".join(["a=1"] * 10_001)
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


class DeskProbes(HostileRig):
    def p_desk(self) -> None:
        for probe in (self.p_desk_fields, self.p_desk_targets, self.p_desk_race, self.p_review_json,
                      self.p_review_cursor, self.p_desk_signin_origin):
            probe()

    # -- plumbing ------------------------------------------------------------------------------
    def _items(self, n: int, tenant: str = "default") -> list[str]:
        ids = [f"hd-{uuid.uuid4().hex[:10]}" for _ in range(n)]
        for post_id in ids:
            self.dep.services.review.record_item(tenant, post_id, "hostile post", "en", None, None,
                                                 Match.from_dict({"matches": []}))
        return ids

    def _signin(self, s: requests.Session, **extra: str) -> requests.Response:
        page = s.get(f"{self.dep.base}/desk/signin", timeout=CLIENT_TIMEOUT_S).text
        token = re.search(r'name="signin_token" value="([^"]+)"', page).group(1)
        return s.post(f"{self.dep.base}/desk/signin", allow_redirects=False, timeout=CLIENT_TIMEOUT_S,
                      data={"signin_token": token, "api_key": self.key["write"], **extra})

    def _csrf(self, s: requests.Session) -> str:
        page = s.get(f"{self.dep.base}/desk/", timeout=CLIENT_TIMEOUT_S).text
        return re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)

    def _logged(self, post_id: str) -> int:
        return len(self.dep.services.review.decisions_for("default", post_id))

    # -- item 2 --------------------------------------------------------------------------------
    def p_desk_fields(self) -> None:
        resp, secs = self.call("POST", "/desk/signin", None, data=FLOOD, headers=FORM)
        self.record("desk-signin-10001-fields", resp, secs, resp is not None and resp.status_code in (400, 413),
                    "400/413 before any key is checked")
        s = requests.Session()
        self._signin(s)
        t0 = time.perf_counter()
        r = s.post(f"{self.dep.base}/desk/decide", data=FLOOD, headers=FORM, timeout=CLIENT_TIMEOUT_S)
        self.record("desk-decide-10001-fields", r, round(time.perf_counter() - t0, 3),
                    r.status_code in (400, 413), "400/413")

    # -- item 3 --------------------------------------------------------------------------------
    def p_desk_targets(self) -> None:
        s = requests.Session()
        t0 = time.perf_counter()
        r = self._signin(s, next="/desk/\r\nSet-Cookie: x=1")
        self.record("desk-signin-crlf-next", r, round(time.perf_counter() - t0, 3),
                    r.status_code == 303 and r.headers.get("Location", "").endswith("/desk/"),
                    "303 to /desk/, and the session works")
        token = self._csrf(s)
        for route, field in (("decide", "post_id"), ("bulk", "pick")):
            (post_id,) = self._items(1)
            t0 = time.perf_counter()
            r = s.post(f"{self.dep.base}/desk/{route}", allow_redirects=False, timeout=CLIENT_TIMEOUT_S,
                       data={"csrf_token": token, field: post_id, "choice": "not_a_claim",
                             "bulk": "not_a_claim", "back": "/desk/\r\nX-Evil: 1"})
            once = self._logged(post_id)
            self.record(f"desk-{route}-crlf-back", r, round(time.perf_counter() - t0, 3),
                        (r.status_code == 303 and once == 1) or (r.status_code == 400 and once == 0),
                        "303 to /desk/ with the decision recorded once (or a 400 before any write)",
                        detail=f"{once} decisions logged")

    # -- item 4 --------------------------------------------------------------------------------
    def p_desk_race(self) -> None:
        ids = self._items(60)
        lists = {"a": ids[:50], "b": ids[10:]}
        answers: dict[str, requests.Response] = {}
        go = threading.Barrier(2)

        def send(name: str) -> None:
            go.wait()
            answers[name] = requests.post(
                f"{self.dep.base}/v1/review/decisions", timeout=CLIENT_TIMEOUT_S,
                headers={"Authorization": f"Bearer {self.key['write']}"},
                json=[{"post_id": p, "action": "not_a_claim"} for p in lists[name]])

        t0 = time.perf_counter()
        threads = [threading.Thread(target=send, args=(n,)) for n in lists]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        secs = round(time.perf_counter() - t0, 3)
        said: set[str] = set()
        true = True
        for name, r in answers.items():
            body = r.json() if r.content else {}
            mine = {d["post_id"] for d in body.get("decisions", [])} if r.status_code in (201, 207) else set()
            lost = {n["post_id"] for n in body.get("not_recorded", [])}
            true &= r.status_code in (201, 207, 409) and not (mine & said)
            true &= (r.status_code != 201 or mine == set(lists[name]))
            true &= (r.status_code != 207 or (body.get("partial") and mine | lost == set(lists[name])))
            true &= (r.status_code != 409 or body.get("recorded") == [])
            said |= mine
        logged = {p for p in ids if self._logged(p)}
        self.record("review-bulk-race", None, secs, true and logged == said,
                    "201 all / 207 partial naming what was not recorded / 409 none, and the log agrees",
                    status=",".join(str(r.status_code) for r in answers.values()),
                    detail=f"{len(said)} said recorded, {len(logged)} logged")

    # -- items 5 and 6 -------------------------------------------------------------------------
    def p_review_json(self) -> None:
        for name, raw in (("deep", "[" * 5000 + "]" * 5000),
                          ("lone-surrogate", '{"post_id": "\\ud800", "action": "reject"}')):
            resp, secs = self.call("POST", "/v1/review/decisions", data=raw.encode(),
                                   headers={"Content-Type": "application/json"})
            self.record(f"review-json-{name}", resp, secs, resp is not None and resp.status_code == 400,
                        "400 problem+json")

    def p_review_cursor(self) -> None:
        resp, secs = self.call("GET", "/v1/review?cursor=W251bGwsbnVsbF0")
        self.record("review-null-cursor", resp, secs,
                    resp is not None and resp.status_code == 422 and "Retry-After" not in resp.headers
                    and "java" not in resp.text.lower() and self.dep.settings.review_index not in resp.text,
                    "422 naming cursor, no index, no Java, no Retry-After")

    # -- item 11 -------------------------------------------------------------------------------
    def p_desk_signin_origin(self) -> None:
        s = requests.Session()
        page = s.get(f"{self.dep.base}/desk/signin", timeout=CLIENT_TIMEOUT_S).text
        token = re.search(r'name="signin_token" value="([^"]+)"', page).group(1)
        t0 = time.perf_counter()
        r = s.post(f"{self.dep.base}/desk/signin", allow_redirects=False, timeout=CLIENT_TIMEOUT_S,
                   headers={"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"},
                   data={"signin_token": token, "api_key": self.key["write"]})
        self.record("desk-signin-cross-origin", r, round(time.perf_counter() - t0, 3), r.status_code == 403,
                    "403, no session")
        s2 = requests.Session()
        s2.cookies.set("fs_desk_signin", "planted", path="/desk")
        t0 = time.perf_counter()
        r = s2.post(f"{self.dep.base}/desk/signin", allow_redirects=False, timeout=CLIENT_TIMEOUT_S,
                    data={"signin_token": "planted", "api_key": self.key["write"]})
        self.record("desk-signin-planted-cookie", r, round(time.perf_counter() - t0, 3), r.status_code == 403,
                    "403: a token the server did not issue")
