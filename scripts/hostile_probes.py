"""``api_checks.py hostile``: issue 21's inputs, replayed against a served API and real workers.

Every probe sends what an attacker or a careless integrator would, and decides pass or fail by
the behaviour the issue asks for (not by today's behaviour): one JSON line per probe,
``{"probe", "status", "seconds", "lost_records", "leaked", "pass", "expected", "detail"}``,
then ``{"summary": …}``. ``status`` is the HTTP status (``"timeout"`` when the client gave up
after ``CLIENT_TIMEOUT_S``); ``lost_records`` counts records a request acknowledged but did not
keep (or another tenant changed); ``leaked`` says whether a reply, job record or worker log
carried a credential, a backend address or a physical index name.

The deployment is loopback-only and throwaway (``api_checks.Deployment``): gunicorn with a short
worker timeout, two ``factsieve worker`` processes (verify jobs apart from the rest, so that a
flood of verifications cannot hold the other probes up), a webhook receiver on 127.0.0.1, an LLM
URL with credentials pointing at a closed port, and small body limits (1 MiB uploads, 64 KiB JSON)
so that the "over the limit" probes send ~1.1 MB instead of 17.6 MB. A request the client gave up
on restarts gunicorn, so a hung worker costs seconds, not the server's timeout.
"""
from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any


from hostile_limits import LimitProbes
from hostile_probes_desk import DeskProbes
from hostile_probes_images import ImageProbes
from hostile_rig import (CLIENT_TIMEOUT_S, EVIL_TEXTS, FAST_S, JOB_CAP, JOB_WAIT_S, LANG_TIMEOUT_S, LIMITS, PROBLEM_JSON, closed_port)


class Hostile(LimitProbes, DeskProbes, ImageProbes):
    # -- probes --------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        self.warm()
        self.start_workers()
        for probe in (self.p_chunked, self.p_job_error_scrub, self.p_post_ids, self.p_webhook_allow_list,
                      self.p_tenant_factchecks, self.p_tenant_evidence, self.p_low,
                      self.p_rotation, self.p_raw_socket, self.p_evidence_large, self.p_lang,
                      self.p_desk, self.p_images, self.p_rate_limits, self.p_job_quota):
            probe()
        failed = [r["probe"] for r in self.results if not r["pass"]]
        return {"probes": len(self.results), "passed": len(self.results) - len(failed), "failed": failed,
                "limits": {k: getattr(self.dep.settings, k) for k in LIMITS},
                "tenant_max_active_jobs": JOB_CAP,
                "webhook_allow_list": f"http://127.0.0.1:{self.receiver.port}", "client_timeout_s": CLIENT_TIMEOUT_S}

    # 1. language detection on crafted text: every route that detects
    def p_lang(self) -> None:
        jobs: list[tuple[str, str, float, int]] = []
        for name, text in EVIL_TEXTS.items():
            resp, secs = self.call("POST", "/v1/match", "read", json={"text": text}, timeout=LANG_TIMEOUT_S)
            took = resp.json().get("took_ms", 0) / 1e3 if resp is not None and resp.status_code == 200 else None
            self.record(f"lang-match-{name}", resp, secs,
                        resp is not None and resp.status_code == 200 and secs < FAST_S["match"],
                        f"200 in < {FAST_S['match']} s", detail=f"took_ms/1e3={took}")
            fc = [{"id": f"hostile-lang-{name}-{self.tag}", "claim": text}]
            resp, secs = self.call("POST", "/v1/fact-checks", json=fc, timeout=LANG_TIMEOUT_S)
            self.record(f"lang-ingest-{name}", resp, secs,
                        resp is not None and resp.status_code in (200, 202) and secs < FAST_S["fact-checks"],
                        f"200/202 in < {FAST_S['fact-checks']} s (no lang given)")
            doc = json.dumps({"url": f"https://example.org/lang-{name}", "title": "t", "text": text})
            resp, secs = self.call("POST", f"/v1/evidence?claim_id=lang-{self.tag}", data=doc.encode(),
                                   headers={"Content-Type": "application/x-ndjson"}, timeout=LANG_TIMEOUT_S)
            self.record(f"lang-evidence-{name}", resp, secs,
                        resp is not None and resp.status_code in (200, 202) and secs < FAST_S["evidence"],
                        f"200/202 in < {FAST_S['evidence']} s")
            for route, body in (("posts", {"id": f"lang-{name}-{self.tag}", "text": text}),
                                ("verify", {"claim": text, "config": "lookup"})):
                resp, secs = self.call("POST", f"/v1/{route}", json=body, timeout=LANG_TIMEOUT_S)
                if resp is not None and resp.status_code == 202:
                    jobs.append((f"lang-{route}-{name}", resp.json()["job_id"], secs, 202))
                else:
                    self.record(f"lang-{route}-{name}", resp, secs, False, "202, and the job finishes")
        # the jobs detect in the worker: each must finish (with whatever outcome) well within
        # the task limit, which a cubic regex does not
        deadline = time.monotonic() + JOB_WAIT_S
        for probe, job_id, secs, status in jobs:
            t0 = time.perf_counter()
            job = self.wait_job(job_id, timeout=max(1.0, deadline - time.monotonic()))
            self.record(probe, None, secs, job is not None and secs < FAST_S["posts"],
                        "202 in < 1 s, and the job finishes", status=status,
                        leaked=self.leaks(json.dumps(job)) if job else False,
                        detail=f"job {job['status'] if job else 'unfinished'} "
                               f"(waited {time.perf_counter() - t0:.1f} s)")

    # 2. bodies over the limit, chunked or not
    def p_chunked(self) -> None:
        s = self.dep.settings
        n, pad = 12, "x" * (s.max_request_bytes // 11)
        ids = [f"hostile-chunk-{self.tag}-{i}" for i in range(n)]
        lines = [json.dumps({"id": i, "claim": f"Hostile probe claim number {k} about chunked uploads",
                             "rating": "False", "notes": pad}) for k, i in enumerate(ids)]
        body = ("\n".join(lines) + "\n").encode()

        def chunks(data: bytes, size: int = 64 * 1024) -> Iterator[bytes]:
            for at in range(0, len(data), size):
                yield data[at:at + size]

        nd = {"Content-Type": "application/x-ndjson"}
        resp, secs = self.call("POST", "/v1/fact-checks?async=true", data=chunks(body), headers=nd)
        lost, detail = None, f"{len(body)} bytes, {n} records, Transfer-Encoding: chunked"
        if resp is not None and resp.status_code == 202:
            job = self.wait_job(resp.json()["job_id"])
            report = (job or {}).get("result") or {}
            kept = sum(1 for i in ids if self.dep.services.store.find(s.index, i) is not None)
            lost = n - kept
            detail += f"; job {job and job['status']}, report {json.dumps(report)[:120]}, {kept} kept"
        self.record("chunked-factchecks-over-limit", resp, secs,
                    resp is not None and resp.status_code == 413, "413", lost=lost, detail=detail)

        resp, secs = self.call("POST", "/v1/fact-checks?async=true", data=body, headers=nd)
        self.record("content-length-factchecks-over-limit", resp, secs,
                    resp is not None and resp.status_code == 413, "413", detail=f"{len(body)} bytes")

        # JSON routes: a valid object followed by white space past the limit; read partially it
        # parses, so a route that reads up to the limit answers as if it were whole. These routes
        # take an image: their limit is the JSON one plus an image in base64
        from plugin.image.inputs import image_body_bytes

        limit = image_body_bytes(s)
        for route, obj in (("match", {"text": "hostile chunked match"}),
                           ("posts", {"id": f"chunked-{self.tag}", "text": "hostile chunked post"}),
                           ("verify", {"claim": "hostile chunked verify", "config": "lookup"})):
            data = (json.dumps(obj) + " " * (limit + 1024)).encode()
            resp, secs = self.call("POST", f"/v1/{route}", data=chunks(data),
                                   headers={"Content-Type": "application/json"})
            self.record(f"chunked-{route}-over-limit", resp, secs,
                        resp is not None and resp.status_code == 413, "413",
                        detail=f"{len(data)} bytes chunked, limit {limit}")

        # evidence: more documents than one embedding batch (a streamed route may write them before
        # it reaches the limit), blank-line padding past the limit, one more document
        cid = f"chunked-{self.tag}"
        docs = [json.dumps({"url": f"https://example.org/chunked/{i}", "title": "t",
                            "text": f"Hostile chunked evidence passage {i}."}) for i in range(40)]
        data = ("\n".join(docs) + "\n" + (" " * 1023 + "\n") * (s.max_request_bytes // 1024 + 64)
                + json.dumps({"url": "https://example.org/chunked/tail", "text": "the tail"}) + "\n").encode()
        resp, secs = self.call("POST", f"/v1/evidence?claim_id={cid}", data=chunks(data), headers=nd)
        written = self.count(s.evidence_index, {"term": {"claim_id": cid}})
        docs_kept = len({h["_source"]["url"] for h in self.dep.services.store.search(
            s.evidence_index, {"size": 50, "query": {"term": {"claim_id": cid}}})["hits"]["hits"]}) if written else 0
        acknowledged = resp is not None and resp.status_code == 200
        self.record("chunked-evidence-over-limit", resp, secs,
                    resp is not None and resp.status_code == 413 and written == 0, "413 and nothing written",
                    lost=len(docs) + 1 - docs_kept if acknowledged else None,
                    detail=f"{len(data)} bytes chunked, {len(docs) + 1} documents; {written} passages written")

    # 3. a large evidence body: a job or a cap, never a request that embeds without bound
    def p_evidence_large(self) -> None:
        s = self.dep.settings
        cid = f"large-{self.tag}"
        words = " ".join(f"sentence{i} tells a different part of a very long hostile document." for i in range(4000))
        data = (json.dumps({"url": "https://example.org/large", "title": "large", "text": words}) + "\n").encode()
        resp, secs = self.call("POST", f"/v1/evidence?claim_id={cid}", data=data,
                               headers={"Content-Type": "application/x-ndjson"})
        written = self.count(s.evidence_index, {"term": {"claim_id": cid}})
        refused = resp is not None and resp.status_code in (413, 422)
        ok = resp is not None and (resp.status_code == 202 or (refused and written == 0))
        self.record("evidence-large-body", resp, secs, ok, "202 (a job), or 413/422 with nothing written",
                    lost=written if refused else None,
                    detail=f"{len(data)} bytes, one document; {written} passages written at answer time")

    # 4. job errors carry no addresses or credentials
    def p_job_error_scrub(self) -> None:
        claim = f"The hostile probe {self.tag} says the lighthouse on Mars was repainted blue in 2019."
        resp, secs = self.call("POST", "/v1/verify", json={"claim": claim, "config": "qa-loop"})
        if resp is None or resp.status_code != 202:
            self.record("job-error-scrub", resp, secs, False, "202, then an error without addresses")
            return
        job = self.wait_job(resp.json()["job_id"], until=lambda j: bool(
            j.get("last_error") or j.get("error") or j.get("status") in ("succeeded", "failed")))
        errors = json.dumps([job.get("error"), job.get("last_error")]) if job else ""
        logs = "".join(open(p, errors="replace").read() for p in self.worker_logs)
        leaked_api = any(m in errors for m in (self.password, "hostile-user", "user:", "127.0.0.1:"))
        leaked_log = self.password in logs
        self.record("job-error-scrub", resp, secs, bool(job and (job.get("error") or job.get("last_error"))),
                    "the job's error names the LLM failure without user, password or address",
                    leaked=leaked_api or leaked_log,
                    detail=f"api leak {leaked_api}, worker log leak {leaked_log}: {errors[:200]}")

    # 5. post ids cannot address another tenant's
    def p_post_ids(self) -> None:
        resp, secs = self.call("POST", "/v1/posts", json={"id": "a\u001fp-1", "text": "hostile post id"})
        self.record("post-id-control-char", resp, secs, resp is not None and resp.status_code == 422, "422")
        resp, secs = self.call("POST", "/v1/posts", "a", json={"id": "p-1", "text": "tenant a's own post"})
        self.record("post-id-tenant-own", resp, secs, resp is not None and resp.status_code == 202,
                    "202 (not 409: nobody else can take tenant a's ids)")
        for name, fc_id in (("unit-separator", "fc\u001f1"), ("nul", "fc\u00001"), ("newline", "fc\n1")):
            resp, secs = self.call("POST", "/v1/fact-checks", json=[{"id": fc_id, "claim": "control char id"}])
            refused = resp is not None and (resp.status_code == 422 or (
                resp.status_code == 200 and resp.json().get("rejected") == 1))
            self.record(f"factcheck-id-{name}", resp, secs, refused, "422 (or the record rejected)")

    # 6. the webhook allow-list names scheme://host:port; our own backends are refused anyway
    def p_webhook_allow_list(self) -> None:
        s = self.dep.settings
        targets = {"opensearch": f"http://127.0.0.1:{self.os_port}/{s.index}/_doc/hostile",
                   "redis": f"http://127.0.0.1:{self.redis_port}/",
                   "llm": f"http://127.0.0.1:{self.llm_port}/v1/chat/completions",
                   "other-port": f"http://127.0.0.1:{closed_port()}/",
                   "port-zero": "http://127.0.0.1:0/"}
        for name, url in targets.items():
            resp, secs = self.call("POST", "/v1/webhooks", json={"url": url, "events": ["post.matched"]})
            self.record(f"webhook-allow-list-{name}", resp, secs, resp is not None and resp.status_code == 422,
                        "422", sent=url, detail="only the receiver's origin is allowed")
        resp, secs = self.call("POST", "/v1/webhooks", json={"url": self.receiver_url("/ok"),
                                                             "events": ["post.matched"]})
        self.record("webhook-allow-list-receiver", resp, secs, resp is not None and resp.status_code == 201,
                    "201 (the allowed scheme://host:port)")
        url = f"http://localhost:{closed_port()}/"
        resp, secs = self.call("POST", "/v1/webhooks", json={"url": url, "events": ["post.matched"]})
        echoed = resp is not None and any(a in resp.text for a in ("127.0.0.1", "::1"))
        self.record("webhook-422-no-resolved-address", resp, secs, resp is not None and resp.status_code == 422,
                    "422 without the address the name resolved to", leaked=echoed, sent=url)

    # 7. fact-checks and evidence are their owner's to change
    def p_tenant_factchecks(self) -> None:
        s = self.dep.settings
        ids = [f"hostile-owned-{self.tag}-{i}" for i in (1, 2)]
        mine = [{"id": i, "claim": f"Tenant a's claim {i} about owned fact-checks", "rating": "False"} for i in ids]
        resp, _ = self.call("POST", "/v1/fact-checks", "a", json=mine)
        if resp is None or resp.status_code != 200:
            self.record("tenant-factcheck-setup", resp, 0, False, "200")
            return
        before = {i: self.dep.services.store.find(s.index, i) for i in ids}
        over = [{"id": ids[0], "claim": mine[0]["claim"], "rating": "True"}]
        resp, secs = self.call("POST", "/v1/fact-checks", "b", json=over)
        after = self.dep.services.store.find(s.index, ids[0])
        changed = int(after is None or after.get("rating") != before[ids[0]].get("rating"))
        self.record("tenant-overwrite-factcheck", resp, secs, not changed,
                    "refused (403/404/409/422 or rejected in the report); a's document unchanged",
                    lost=changed, detail=f"rating now {after and after.get('rating')}")
        resp, secs = self.call("DELETE", f"/v1/fact-checks/{ids[1]}", "b")
        gone = int(self.dep.services.store.find(s.index, ids[1]) is None)
        self.record("tenant-delete-factcheck", resp, secs, not gone and resp is not None and resp.status_code >= 400,
                    "403/404; a's document still there", lost=gone)
        resp, secs = self.call("GET", f"/v1/fact-checks/hostile-unknown-{self.tag}")
        leaked = resp is not None and any(m in resp.text for m in (f"{s.index}-v", '"_index"', '"found"'))
        self.record("factcheck-404-no-internals", resp, secs, resp is not None and resp.status_code == 404,
                    "404 without physical index names or OpenSearch's raw answer", leaked=leaked)

    def p_tenant_evidence(self) -> None:
        s = self.dep.settings
        url, cid = f"https://example.org/owned-{self.tag}", f"owned-{self.tag}"
        nd = {"Content-Type": "application/x-ndjson"}
        doc = {"url": url, "title": "a's page", "text": "Tenant a's evidence passage, as published."}
        resp, _ = self.call("POST", f"/v1/evidence?claim_id={cid}", "a", data=json.dumps(doc).encode(), headers=nd)
        if resp is None or resp.status_code not in (200, 202):
            self.record("tenant-evidence-setup", resp, 0, False, "200")
            return
        before = self.count(s.evidence_index, {"bool": {"filter": [
            {"term": {"claim_id": cid}}, {"match_phrase": {"text": "as published"}}]}})
        doc2 = {**doc, "title": "b's page", "text": "Tenant b rewrote this passage."}
        resp, secs = self.call("POST", f"/v1/evidence?claim_id={cid}", "b", data=json.dumps(doc2).encode(), headers=nd)
        after = self.count(s.evidence_index, {"bool": {"filter": [
            {"term": {"claim_id": cid}}, {"match_phrase": {"text": "as published"}}]}})
        changed = max(0, before - after)
        self.record("tenant-overwrite-evidence", resp, secs, before > 0 and not changed,
                    "b's upload of a's document does not replace a's passages", lost=changed,
                    detail=f"a's passages before {before}, after {after}")

    # Low
    def p_low(self) -> None:
        resp, _ = self.call("POST", "/v1/webhooks", json={"url": self.receiver_url("/low"), "events": ["post.matched"]})
        wid = resp.json()["id"] if resp is not None and resp.status_code == 201 else "whk_0000000000000000"
        resp, secs = self.call("GET", f"/v1/webhooks/{wid}/deliveries?limit=%C2%B2")
        self.record("deliveries-limit-superscript", resp, secs, resp is not None and resp.status_code == 400, "400")
        resp, secs = self.call("POST", "/v1/evidence", data=b"not json\n{\"x\": 1}\n",
                               headers={"Content-Type": "application/x-ndjson"})
        self.record("evidence-only-bad-lines", resp, secs, resp is not None and resp.status_code == 422,
                    "422 (as /v1/fact-checks answers)")
        resp, secs = self.call("GET", f"/v1/webhooks?hostile={self.tag}")
        self.record("unknown-query-parameter", resp, secs, resp is not None and resp.status_code == 400,
                    "400 naming the parameter")

    def p_rotation(self) -> None:
        path = f"/rotate-{self.tag}"
        resp, _ = self.call("POST", "/v1/webhooks", json={"url": self.receiver_url(path), "events": ["post.matched"],
                                                          "min_score": 0})
        if resp is None or resp.status_code != 201:
            self.record("secret-rotation-overlap-0", resp, 0, False, "a subscription to rotate")
            return
        wid = resp.json()["id"]
        # in the body it is refused (the route takes none), never silently ignored
        in_body, _ = self.call("POST", f"/v1/webhooks/{wid}/secret", json={"overlap_s": 0})
        if in_body is None or in_body.status_code != 400:
            self.record("secret-rotation-overlap-0", in_body, 0, False,
                        "a body on the rotation route is a 400 (overlap_s is a query parameter)")
            return
        rot, secs = self.call("POST", f"/v1/webhooks/{wid}/secret?overlap_s=0")
        how = "query"
        post = self.call("POST", "/v1/posts", json={"id": f"rotate-{self.tag}",
                                                    "text": "5G towers spread the coronavirus"})[0]
        deadline = time.monotonic() + JOB_WAIT_S
        while not self.receiver.received(path) and time.monotonic() < deadline:
            time.sleep(0.3)
        got = self.receiver.received(path)
        sig = got[0]["headers"].get("X-FactSieve-Signature", "") if got else ""
        self.record("secret-rotation-overlap-0", rot, secs,
                    rot is not None and rot.status_code == 200 and sig.count("sha256=") == 1,
                    "the rotation answers 200 and the next delivery carries one signature",
                    detail=f"overlap_s=0 as {how}; post {post.status_code if post is not None else None}; "
                           f"signature header {sig[:20]}… ({sig.count('sha256=')} signatures)")

    def p_raw_socket(self) -> None:
        port = self.dep.port
        cases = {"request-line-9k": f"GET /{'a' * 9000} HTTP/1.1\r\nHost: x\r\n\r\n".encode(),
                 "header-9k": f"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: {'b' * 9000}\r\n\r\n".encode(),
                 "nul-in-header": b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n",
                 "cr-in-header": b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n",
                 "fields-200": (b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
                                + b"".join(b"X-%d: v\r\n" % i for i in range(200)) + b"\r\n")}
        for name, raw in cases.items():
            t0 = time.perf_counter()
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=CLIENT_TIMEOUT_S) as sock:
                    sock.sendall(raw)
                    data = b""
                    while True:
                        chunk = sock.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                        if b"\r\n\r\n" in data and len(data) > 4096:
                            break
            except OSError as exc:
                data = f"({type(exc).__name__})".encode()
            secs = round(time.perf_counter() - t0, 3)
            head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")
            status_line = head.split("\r\n", 1)[0]
            code = int(status_line.split()[1]) if status_line.startswith("HTTP/") and len(status_line.split()) > 1 else None
            ctype = next((line.split(":", 1)[1].strip() for line in head.split("\r\n")[1:]
                          if line.lower().startswith("content-type:")), "")
            self.record(f"raw-{name}", None, secs, code is not None and 400 <= code < 500 and ctype.startswith(PROBLEM_JSON),
                        "4xx, Content-Type: application/problem+json", status=code or "no answer",
                        leaked=False, detail=f"{status_line[:60]!r}, content type {ctype!r}")


def run(checks: Any) -> int:
    h = Hostile(checks)
    try:
        summary = h.run()
    finally:
        h.close()
    print(json.dumps({"summary": summary}), flush=True)
    return 0 if not summary["failed"] else 1
