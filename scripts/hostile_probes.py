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
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import requests

CLIENT_TIMEOUT_S = 10.0
#: server-side seconds a request on the language-detection class may take (the issue: < 50 ms
#: for detection itself; matching and embedding come on top: an evidence body embeds up to
#: FACTSIEVE_SYNC_EVIDENCE_MAX_PASSAGES passages in the request, ~28 for 20,000 characters)
FAST_S = {"match": 1.0, "fact-checks": 3.0, "evidence": 8.0, "posts": 1.0, "verify": 1.0}
#: how long an async probe waits for its job
JOB_WAIT_S = 45.0
LIMITS = {"max_request_bytes": 1024 * 1024, "max_json_bytes": 64 * 1024,
          "sync_ingest_max_bytes": 64 * 1024, "rate_limit_requests": 300}
#: ``FACTSIEVE_TENANT_MAX_ACTIVE_JOBS`` in the probed deployment, so the flood reaches it quickly
JOB_CAP = 20
FLOOD_MAX = 200
#: the issue's inputs, cut to the API's 20,000-character text limit ("http://" * 3000 is 21,000)
EVIL_TEXTS = {"at20000": "@" * 20000, "a_at10000": "a@" * 10000, "http3000": ("http://" * 3000)[:20000]}
#: the language-detection probes give up sooner: their pass mark is 1 to 8 s
LANG_TIMEOUT_S = 10.0
PROBLEM_JSON = "application/problem+json"


# the webhook receiver and the free-port helper are the integration tests' own (loopback only)
from tests.integration.conftest import Receiver, closed_port  # noqa: E402


def port_of(url: str, default: int) -> int:
    return urlsplit(url.split(",")[0]).port or default


# -- the run ------------------------------------------------------------------------------------
class Outcome(dict):
    """One probe's line."""


class Hostile:
    def __init__(self, checks: Any) -> None:
        """``checks``: the ``api_checks`` module (its ``Deployment``, ``env_for``, ``Scope``)."""
        self.checks = checks
        self.tag = uuid.uuid4().hex[:8]
        self.receiver = Receiver()
        self.password = f"pw-{self.tag}-secret"
        self.llm_port = closed_port()
        overrides: dict[str, Any] = {
            **LIMITS, "tenant_max_active_jobs": JOB_CAP,
            "llm_url": f"http://hostile-user:{self.password}@127.0.0.1:{self.llm_port}/v1",
            "task_max_retries": 1, "task_time_limit_s": 30, "webhook_timeout_s": 2.0,
            "webhook_max_attempts": 2, "webhook_backoff_s": 0.2, "webhook_backoff_max_s": 1.0,
            "evidence_index": f"fs-bench-ev-{self.tag}",
            "webhook_allowed_hosts": (f"http://127.0.0.1:{self.receiver.port}",)}
        self.dep = checks.Deployment(2, serve_args=("--timeout", "20"), **overrides)
        self.workers: list[subprocess.Popen] = []
        self.worker_logs: list[str] = []
        s = self.dep.settings
        self.os_port = port_of(s.opensearch_url, 9200)
        self.redis_port = port_of(s.redis_url, 6379)
        Scope = checks.Scope
        keys = self.dep.services.keys
        self.key = {"write": self.dep.key,
                    "read": keys.create("hostile read", Scope.READ)[1],
                    "admin": keys.create("hostile admin", Scope.ADMIN)[1],
                    "a": keys.create("hostile tenant a", Scope.WRITE, tenant="a")[1],
                    "b": keys.create("hostile tenant b", Scope.WRITE, tenant="b")[1],
                    "flood": keys.create("hostile flood", Scope.READ, tenant="flood")[1],
                    "calm": keys.create("hostile calm", Scope.READ, tenant="calm")[1],
                    "rate": keys.create("hostile rate", Scope.READ)[1]}
        self.results: list[Outcome] = []

    # -- plumbing ------------------------------------------------------------------------------
    def markers(self) -> list[str]:
        """Strings no reply may carry: the LLM credentials, backend addresses, physical indexes."""
        s = self.dep.settings
        return [self.password, "hostile-user", f"127.0.0.1:{self.os_port}", f"127.0.0.1:{self.redis_port}",
                f"127.0.0.1:{self.llm_port}", f"{s.index}-v", f"{s.jobs_index}-v", f"{s.evidence_index}-v"]

    def leaks(self, text: str, sent: str = "") -> bool:
        return any(m in text and m not in sent for m in self.markers())

    def call(self, method: str, path: str, key: str | None = "write", *, timeout: float = CLIENT_TIMEOUT_S,
             headers: dict[str, str] | None = None, **kw: Any) -> tuple[requests.Response | None, float]:
        h = dict(headers or {})
        if key is not None:
            h["Authorization"] = f"Bearer {self.key[key]}"
        t0 = time.perf_counter()
        try:
            resp = requests.request(method, f"{self.dep.base}{path}", headers=h, timeout=timeout, **kw)
        except requests.RequestException:  # timed out, or the connection dropped
            secs = round(time.perf_counter() - t0, 3)
            self.recover()
            return None, secs
        return resp, round(time.perf_counter() - t0, 3)

    def recover(self) -> None:
        """A request the client gave up on holds a gunicorn worker: start gunicorn again."""
        self.dep.restart()
        self.warm()

    def warm(self) -> None:
        """Match a few ordinary posts first, so that no probe's seconds count a gunicorn worker's
        first match (the configuration's query tower loads then)."""
        from concurrent.futures import ThreadPoolExecutor

        def one(_: int) -> None:
            requests.post(f"{self.dep.base}/v1/match", json={"text": "warming up the matcher"},
                          headers={"Authorization": f"Bearer {self.key['write']}"}, timeout=120)

        # concurrently, so that every sync worker (busy with one request) takes some
        with ThreadPoolExecutor(self.dep.workers) as pool:
            for _ in range(3):
                list(pool.map(one, range(self.dep.workers)))

    def record(self, probe: str, resp: requests.Response | None, seconds: float, ok: bool, expected: str,
               *, lost: int | None = None, leaked: bool | None = None, detail: str = "",
               sent: str = "", status: Any = None) -> Outcome:
        if status is None:
            status = resp.status_code if resp is not None else "timeout"
        if leaked is None:
            leaked = self.leaks(resp.text, sent) if resp is not None else False
        if resp is not None and resp.status_code >= 400 and not ok:
            # what the server said, shortened (and without anything leaked)
            said = resp.text if resp.headers.get("Content-Type", "").endswith("json") else resp.text[:80]
            detail = "; ".join(filter(None, [detail, said.replace(self.password, "<password>")]))
        out = Outcome(probe=probe, status=status, seconds=seconds, lost_records=lost, leaked=leaked,
                      **{"pass": bool(ok and not leaked and not lost)}, expected=expected,
                      detail=detail[:300])
        self.results.append(out)
        print(json.dumps(out, ensure_ascii=False), flush=True)
        return out

    def wait_job(self, job_id: str, key: str = "write", timeout: float = JOB_WAIT_S,
                 until: Callable[[dict[str, Any]], bool] | None = None) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        until = until or (lambda j: j.get("status") in ("succeeded", "failed"))
        while time.monotonic() < deadline:
            resp, _ = self.call("GET", f"/v1/jobs/{job_id}", key)
            if resp is not None and resp.ok and until(resp.json()):
                return resp.json()
            time.sleep(0.3)
        return None

    def start_workers(self) -> None:
        env = self.checks.env_for(self.dep.settings)
        for i, queues in enumerate(("match,ingest,webhooks,rerank", "verify")):
            log = tempfile.NamedTemporaryFile(prefix=f"factsieve-hostile-worker{i}-", suffix=".log",
                                              delete=False)
            self.worker_logs.append(log.name)
            self.workers.append(subprocess.Popen(
                [sys.executable, "-m", "cli.main", "worker", "--pool", "solo", "--concurrency", "1",
                 "--loglevel", "INFO", "--hostname", f"hostile{i}-{self.tag}@%h", "--queues", queues],
                cwd=self.checks.ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True))
        deadline = time.monotonic() + 90
        for proc, path in zip(self.workers, self.worker_logs):
            while b" ready." not in open(path, "rb").read():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"a worker did not start; log: {path}")
                time.sleep(0.3)

    def close(self) -> None:
        for proc in self.workers:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        self.receiver.close()
        try:
            self.dep.services.store.delete_index(f"{self.dep.settings.evidence_index}-v*")
            self.dep.services.store.delete_index_template(f"factsieve-{self.dep.settings.evidence_index}")
        finally:
            self.dep.close()

    def count(self, alias: str, query: dict[str, Any]) -> int:
        store = self.dep.services.store
        if not store.index_exists(alias):
            return 0
        store.refresh(alias)
        body = {"size": 0, "track_total_hits": True, "query": query}
        return int(store.search(alias, body)["hits"]["total"]["value"])

    # -- deployment variants -------------------------------------------------------------------
    def receiver_url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.receiver.port}{path}"

    # -- probes --------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        self.warm()
        self.start_workers()
        for probe in (self.p_chunked, self.p_job_error_scrub, self.p_post_ids, self.p_webhook_allow_list,
                      self.p_tenant_factchecks, self.p_tenant_evidence, self.p_low,
                      self.p_rotation, self.p_raw_socket, self.p_evidence_large, self.p_lang,
                      self.p_rate_limits, self.p_job_quota):
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
        # parses, so a route that reads up to the limit answers as if it were whole
        for route, obj in (("match", {"text": "hostile chunked match"}),
                           ("posts", {"id": f"chunked-{self.tag}", "text": "hostile chunked post"}),
                           ("verify", {"claim": "hostile chunked verify", "config": "lookup"})):
            data = (json.dumps(obj) + " " * (s.max_json_bytes + 1024)).encode()
            resp, secs = self.call("POST", f"/v1/{route}", data=chunks(data),
                                   headers={"Content-Type": "application/json"})
            self.record(f"chunked-{route}-over-limit", resp, secs,
                        resp is not None and resp.status_code == 413, "413",
                        detail=f"{len(data)} bytes chunked, limit {s.max_json_bytes}")

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

    def p_rate_limits(self) -> None:
        limit = self.dep.settings.rate_limit_requests
        seen = None
        t0 = time.perf_counter()
        s = requests.Session()
        for _ in range(limit + 5):
            r = s.get(f"{self.dep.base}/v1/webhooks", headers={"Authorization": f"Bearer {self.key['rate']}"},
                      timeout=CLIENT_TIMEOUT_S)
            if r.status_code == 429:
                seen = r
                break
        secs = round(time.perf_counter() - t0, 3)
        hdrs = {k: v for k, v in (seen.headers.items() if seen is not None else ()) if k.lower().startswith(("ratelimit", "retry-after"))}
        self.record("rate-limit-429-headers", seen, secs,
                    seen is not None and {"ratelimit-limit", "ratelimit-remaining", "ratelimit-reset", "retry-after"}
                    <= {k.lower() for k in hdrs}, "429 with Retry-After and RateLimit-*", detail=json.dumps(hdrs))
        seen, n = None, 0
        t0 = time.perf_counter()
        for n in range(1, limit + 11):
            r = s.get(f"{self.dep.base}/v1/webhooks", timeout=CLIENT_TIMEOUT_S)
            if r.status_code == 429:
                seen = r
                break
        self.record("unauthenticated-rate-limit", seen, round(time.perf_counter() - t0, 3), seen is not None,
                    f"429 within {limit + 10} unauthenticated requests", status=seen.status_code if seen is not None else "no 429",
                    detail=f"{n} requests sent")

    # 8. a per-tenant job cap
    def p_job_quota(self) -> None:
        body = {"claim": "Hostile flood: the moon landing was filmed in a studio", "config": "lookup"}
        t0 = time.perf_counter()
        first, n = None, 0
        s = requests.Session()
        for n in range(1, FLOOD_MAX + 1):
            r = s.post(f"{self.dep.base}/v1/verify", json=body, timeout=CLIENT_TIMEOUT_S,
                       headers={"Authorization": f"Bearer {self.key['flood']}"})
            if r.status_code == 429:
                first = r
                break
        secs = round(time.perf_counter() - t0, 3)
        calm, _ = self.call("POST", "/v1/verify", "calm", json=body)
        ok = (first is not None and "Retry-After" in first.headers and calm is not None
              and calm.status_code == 202)
        self.record("job-quota-flood", first, secs, ok,
                    f"429 with Retry-After before {FLOOD_MAX} jobs, and another tenant still gets 202",
                    status=first.status_code if first is not None else "no 429",
                    detail=(f"429 after {n - 1} accepted jobs" if first is not None else f"{n} jobs accepted")
                           + "; retry-after "
                           f"{first.headers.get('Retry-After') if first is not None else None}; "
                           f"other tenant {calm.status_code if calm is not None else 'timeout'}; "
                           + (first.text[:120] if first is not None else ""))


def run(checks: Any) -> int:
    h = Hostile(checks)
    try:
        summary = h.run()
    finally:
        h.close()
    print(json.dumps({"summary": summary}), flush=True)
    return 0 if not summary["failed"] else 1
