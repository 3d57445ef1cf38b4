"""Hostile probes of the image inputs (issue 35, items 1, 7 and 8): a page of dense text to
``/v1/match`` (a read key) and as a post job, the cheap image checks before ``/v1/posts``
answers 202, and a multipart body with two ``image`` parts."""
from __future__ import annotations

import base64
import json
import time
import uuid

from hostile_rig import HostileRig

from tests.image_drawing import png_header


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


class ImageProbes(HostileRig):
    def p_images(self) -> None:
        """Every image probe; called as ``ImageProbes.p_images(rig)`` on any ``HostileRig``."""
        for probe in (ImageProbes.p_dense_text, ImageProbes.p_deferred_image_checks,
                      ImageProbes.p_two_image_parts):
            probe(self)

    # item 1: one image's OCR is bounded whatever its content
    def p_dense_text(self) -> None:
        from tests.image_drawing import dense_text, encode

        data = encode(dense_text())
        limit = self.dep.settings.ocr_api_budget_s + 5.0  # the budget, one layout analysis, matching
        resp, secs = self.call("POST", "/v1/match", "read", json={"image": _b64(data), "lang": "en"},
                               timeout=limit + 20)
        body = resp.json() if resp is not None and resp.status_code == 200 else {}
        spent = ((body.get("image") or {}).get("ocr") or {}).get("budget_spent")
        self.record("dense-text-image-match", resp, secs,
                    resp is not None and resp.status_code == 200 and secs < limit and spent is True,
                    f"200 in < {limit:g} s with the OCR budget's note",
                    detail=f"{len(data)} bytes; budget_spent={spent}; notes={body.get('notes')}")
        post = {"id": f"dense-{self.tag}", "image": _b64(data), "lang": "en"}
        resp, secs = self.call("POST", "/v1/posts", json=post, timeout=30)
        job = None
        if resp is not None and resp.status_code == 202:
            job = self.wait_job(resp.json()["job_id"])
        said = json.dumps(job or {})
        self.record("dense-text-image-post-job", resp, secs,
                    job is not None and job.get("status") == "succeeded" and "budget_spent\": true" in said,
                    "202, and the job succeeds with the OCR budget spent",
                    detail=f"job {job and job.get('status')}; {said[:160]}")

    # item 7: what /v1/match refuses at once, /v1/posts refuses before 202 (the id stays free)
    def p_deferred_image_checks(self) -> None:
        from tests.image_drawing import card, encode

        cases = {"png-50000x50000": {"image": _b64(png_header(50_000, 50_000))},
                 "svg": {"image": _b64(b'<svg xmlns="http://www.w3.org/2000/svg"/>')},
                 "image-url-opensearch": {"image_url": f"http://127.0.0.1:{self.os_port}/"}}
        fixed = {"image": _b64(encode(card("A fixed image")))}
        for name, image in cases.items():
            matched, _ = self.call("POST", "/v1/match", json=image)
            post_id = f"deferred-{name}-{uuid.uuid4().hex[:8]}"
            resp, secs = self.call("POST", "/v1/posts", json={"id": post_id, **image})
            again, _ = self.call("POST", "/v1/posts", json={"id": post_id, **fixed})
            want = matched.status_code if matched is not None else None
            self.record(f"deferred-image-check-{name}", resp, secs,
                        resp is not None and want is not None and 400 <= want < 500
                        and resp.status_code == want and again is not None and again.status_code == 202,
                        "the status /v1/match gives, before 202; the fixed post then 202",
                        sent=json.dumps(image),  # the image_url echoed is the client's own
                        detail=f"match {want}; fixed resubmission {again.status_code if again is not None else None}")

    # item 8: a field given twice is a 422 naming it
    def p_two_image_parts(self) -> None:
        from tests.image_drawing import card, encode

        one, two = encode(card("first")), encode(card("second"))
        for route, fields in (("/v1/match", {}), ("/v1/posts", {"id": f"two-{self.tag}"})):
            files = [("image", ("a.png", one, "image/png")), ("image", ("b.png", two, "image/png"))]
            t0 = time.perf_counter()
            resp, secs = self.call("POST", route, data=fields, files=files)
            fields_named = [e.get("field") for e in (resp.json().get("errors") or [])] if resp is not None \
                and resp.headers.get("Content-Type", "").endswith("json") else []
            self.record(f"two-image-parts{route.replace('/', '-')}", resp, secs or time.perf_counter() - t0,
                        resp is not None and resp.status_code == 422 and fields_named == ["image"],
                        "422 problem naming the field image", detail=f"errors name {fields_named}")
