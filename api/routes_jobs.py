"""Post, verification and rerank routes: each becomes a job a worker runs; jobs are read back
by id (posts also by their own id)."""
from __future__ import annotations

import hashlib

from flask import Response, g

from plugin.errors import InvalidRequest
from plugin.models import MAX_TEXT_CHARS
from plugin.settings import Settings

from plugin.service.handlers import verify_request
from plugin.service.jobs import JobKind, JobStatus
from plugin.service.keys import Scope

from api import schemas as s
from api.routing import accepted, enqueue, job_out, job_url, reply, route, services


# -- posts and jobs ---------------------------------------------------------------------------------
@route("POST", "/v1/posts", summary="Submit a post: a worker matches it and notifies webhooks",
       tag="posts", scope=Scope.WRITE, body=s.PostIn, status=202, response=s.PostAccepted,
       errors=(409,), images=True,
       description="Idempotent on the post id: resubmitting the same post returns its job "
                   "(duplicate: true); the same id with different content is a 409. A post may "
                   "come with an image (`image` in base64 or `image_url`, or multipart/form-data), "
                   "with or without `text`: it is checked as `/v1/match` checks it before the 202 "
                   "(type, size, header dimensions, an image_url's address), then the worker reads "
                   "it and matches its text and hash; "
                   "the result and `post.matched` carry each match's `signals` and the image's "
                   "OCR text.")
def submit_post(body: s.PostIn) -> Response:
    from plugin.image.inputs import check_input

    post = body.model_dump(mode="json", exclude_none=True)
    # what /v1/match refuses at once is refused here too, before the post id is taken
    raw = check_input(post, services().settings)
    image = post.pop("image", None)
    if raw is not None:  # the bytes go beside the job; the post names them by digest
        post["image_sha256"] = hashlib.sha256(raw).hexdigest()
    job, created = services().jobs.submit_post(post, g.api_key.tenant, body=image)
    if created or job["status"] == JobStatus.QUEUED.value:
        enqueue(job["id"])
    url = job_url(job["id"])
    return reply(s.PostAccepted(post_id=body.id, job_id=job["id"], status=job["status"],
                                status_url=url, duplicate=not created), 202, {"Location": url})


@route("GET", "/v1/posts/<path:post_id>", summary="A submitted post's job, match result and review decisions",
       tag="posts", response=s.PostOut)
def get_post(post_id: str) -> Response:
    tenant = g.api_key.tenant
    job = job_out(services().jobs.get_post(post_id, tenant))
    decisions = [d.to_dict() for d in services().review.decisions_for(tenant, post_id)]
    return reply(s.PostOut.model_validate({**job.model_dump(), "decisions": decisions}))


@route("POST", "/v1/verify", summary="Verify a claim (a job)", tag="jobs", body=s.VerifyIn,
       status=202, response=s.JobAccepted, images=True,
       description="A worker verifies the claim with a named configuration: a published "
                   "fact-check that matches it well answers it (`stage: previously-fact-checked`); "
                   "otherwise evidence published before the claim date is retrieved and an LLM "
                   "asks and answers the questions that decide it, then gives a verdict with a "
                   "justification whose statements cite the question-answer pairs. The verdict "
                   "is supported by its `label_scores`: the result's `verdict_source` says where "
                   "it came from (`llm`, `llm+head`, `head`, `fact-check`, or `none` for Not "
                   "Enough Evidence when nothing could decide), with `fallback_reason` when the "
                   "LLM's output was invalid twice and the verdict head decided instead. The job reports "
                   "`progress` while it runs; subscribers to `claim.verified` get the result. "
                   "With an image (`image`, `image_url` or multipart), the text read from it, "
                   "after the claim when both are given, is the claim verified.")
def verify(body: s.VerifyIn) -> Response:
    svc = services()
    inp = body.model_dump(mode="json", exclude_none=True, exclude={"image", "image_url"})
    svc.verification.config(body.config)  # an unknown configuration is a 400 now, not a failed job
    inp["claim"] = claim_of(body, svc.settings)
    verify_request(inp).validated()  # so is a claim date in the future
    job, _ = svc.jobs.create(JobKind.VERIFY, inp, tenant=g.api_key.tenant)
    enqueue(job["id"])
    return accepted(job)


def claim_of(body: s.VerifyIn, settings: Settings) -> str:
    """The claim a verification is asked: the claim given, then the text read from the image."""
    from plugin.image.inputs import analyse_input
    from plugin.search.image_query import post_text

    image = analyse_input(body.model_dump(), settings, ocr_budget_s=settings.ocr_api_budget_s)
    claim = post_text(body.claim or "", image)
    if not claim:
        detail = "no text was read from the image: give the claim as text"
        raise InvalidRequest(detail, errors=[{"field": "image_url" if body.image_url else "image",
                                              "message": detail, "type": "image_without_text"}])
    return claim[:MAX_TEXT_CHARS]


@route("POST", "/v1/rerank", summary="Match and rerank with a cross-encoder (a job)", tag="jobs",
       body=s.RerankIn, status=202, response=s.JobAccepted,
       description="Without a configured reranker the result is the fused order and says so.")
def rerank(body: s.RerankIn) -> Response:
    services().config(body.config)
    job, _ = services().jobs.create(JobKind.RERANK, body.model_dump(mode="json", exclude_none=True),
                                    tenant=g.api_key.tenant)
    enqueue(job["id"])
    return accepted(job)


@route("GET", "/v1/jobs/<job_id>", summary="A job's status and, once finished, its result or error",
       tag="jobs", response=s.JobOut)
def get_job(job_id: str) -> Response:
    return reply(job_out(services().jobs.get(job_id, g.api_key.sees)))
