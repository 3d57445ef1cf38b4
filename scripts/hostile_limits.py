"""Hostile probes of the limits: per-client rate limits and the per-tenant job quota."""
from __future__ import annotations

import json
import time

import requests

from hostile_rig import (CLIENT_TIMEOUT_S, FLOOD_MAX, HostileRig)


class LimitProbes(HostileRig):
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

