"""What each kind of job does, as plain functions of ``(services, job)`` → result dict.

The Celery tasks stay thin: they mark the job running, call one of these, and persist the
result. Every function here may run twice for one job (a worker killed mid-job, a redelivered
message), so each is idempotent: matching is a read, ingestion uses stable ids, and webhook
deliveries are planned under deterministic ids.
"""
from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import TYPE_CHECKING, Any

from plugin.image.inputs import analyse_input
from plugin.ingest import Format, parse_bytes
from plugin.learn.calibration_step import auto_confirm
from plugin.search.image_query import post_text
from plugin.search.request import MatchRequest
from plugin.search.result import Match
from plugin.owners import Writer
from plugin.claims.trending import payload as trending_payload
from plugin.service import claiming
from plugin.service.matching import Occasion, match_post
from plugin.service.services import Services
from plugin.lang import detect_language
from plugin.verify.verifier import VerifyRequest
from plugin.service.keys import DEFAULT_TENANT
from plugin.events import Event, wants

if TYPE_CHECKING:
    from plugin.image.model import ImageAnalysis

def verify_request(inp: dict[str, Any]) -> VerifyRequest:
    """A ``VerifyRequest`` from a job's JSON input (dates as ISO strings)."""
    day = inp.get("date")
    return VerifyRequest(claim=inp["claim"], date=date.fromisoformat(day) if day else None,
                         lang=inp.get("lang"), exclude_urls=tuple(inp.get("exclude_urls") or ()),
                         exclude_domains=tuple(inp.get("exclude_domains") or ()),
                         budget_s=inp.get("budget_s"))


def run_verify(services: Services, job: dict[str, Any],
               enqueue_delivery: Callable[[str], None]) -> dict[str, Any]:
    """Verify a claim with its configuration (progress reported on the job as it goes), then
    plan and enqueue a ``claim.verified`` delivery for every subscription that wants it."""
    inp = job["input"]
    cfg = services.verification.config(inp.get("config"))
    result = services.verification.verifier(cfg, job.get("tenant", DEFAULT_TENANT)).verify(
        verify_request(inp), cfg, progress=lambda stage, turn: services.jobs.progress(job["id"], stage, turn))
    payload = result.to_dict()  # the webhook's data; the job's result adds the deliveries
    lang = inp.get("lang") or detect_language(inp["claim"])
    deliveries = []
    for sub in services.webhooks.all(job.get("tenant", DEFAULT_TENANT)):
        if wants(sub, Event.CLAIM_VERIFIED, lang, None):
            did = services.webhooks.plan(sub, Event.CLAIM_VERIFIED, payload, dedupe_key=job["id"])
            enqueue_delivery(did)
            deliveries.append({"subscription_id": sub["id"], "delivery_id": did})
    return {**payload, "deliveries": deliveries}


def run_rerank(services: Services, job: dict[str, Any]) -> dict[str, Any]:
    """A reranked match, on the one match path as a job (``plugin.service.matching``)."""
    inp = job["input"]
    result = match_post(services.matching, MatchRequest.from_mapping({**inp, "rerank": True}),
                        job.get("tenant", DEFAULT_TENANT), config=inp.get("config"),
                        occasion=Occasion.JOB, post=inp).to_dict()
    if result["notes"]:
        result["note"] = " ".join(result["notes"])
    return result


def run_ingest(services: Services, job: dict[str, Any]) -> dict[str, Any]:
    inp = job["input"]
    data = services.jobs.body(job["id"]).encode("utf-8")
    records = parse_bytes(data, Format.parse(inp.get("format") or "auto"), inp.get("name") or "body")
    return services.factchecks.ingest(records, writer=Writer.of_job(job)).to_dict()


def run_evidence(services: Services, job: dict[str, Any]) -> dict[str, Any]:
    """Ingest a queued evidence body. The passage caps are checked on the whole input before
    anything is written (a refusal fails the job with its 413 or 422); passage ids are stable,
    so a second run updates the same passages in place. The job's writer owns what it writes."""
    data = services.jobs.body(job["id"]).encode("utf-8")
    return services.evidence.ingest_body(data, job["input"].get("claim_id"),
                                         writer=Writer.of_job(job)).to_dict()


def best_score(match: Match) -> float | None:
    """What a subscription's ``min_score`` is compared with: the best match's calibrated
    confidence (a probability), or its fused score under a configuration without a confidence
    model; ``None`` without matches."""
    top = match.best
    if top is None:
        return None
    return top.confidence if top.confidence is not None else top.score


def post_image(services: Services, job: dict[str, Any]) -> ImageAnalysis | None:
    """A post job's image read by the image stage, here in the worker (its bytes are the job's
    body, named in the post by ``image_sha256``; an ``image_url`` is fetched now); ``None`` for
    a post without one."""
    post = job["input"]["post"]
    if (job["input"].get("channel") or {}).get("media"):  # a tipline photo: from its channel
        from plugin.service.tipline import channel_image

        return channel_image(services, job)
    if post.get("image_sha256"):
        data = {"image": services.jobs.body(job["id"])}
    elif post.get("image_url"):
        data = {"image_url": post["image_url"]}
    else:
        return None
    return analyse_input({**data, "lang": post.get("lang")}, services.settings)


def run_post(services: Services, job: dict[str, Any],
             enqueue_delivery: Callable[[str], None]) -> dict[str, Any]:
    """Match a post on the one match path as a job (``plugin.service.matching``: reranked where
    its configuration reranks, the tenant's learning applied), join it to its claim and remember
    it (``plugin.service.claiming``, ``Services.posts``),
    record its review item (``ReviewDesk.record_item``, which applies the tenant's review rules),
    auto-confirm it when the tenant opted in, then plan and enqueue a ``post.matched`` delivery
    for every subscription whose filters it passes and whose threshold its best match clears;
    a tipline message is then answered (``plugin.service.tipline.after_match``)."""
    given = job["input"]["post"]
    tenant = job.get("tenant", DEFAULT_TENANT)
    image = post_image(services, job)
    found = match_post(services.matching, MatchRequest.from_mapping(given, image=image), tenant,
                       config=job["input"].get("config"), occasion=Occasion.JOB, post=given)
    # what the desk, the memory and webhooks see of a post with an image: its caption and the
    # text read from the image as its text (the image itself is in the result)
    post = given if image is None else {**given, "text": post_text(given.get("text") or "", image)}
    # the claim it joins, then the post with its claim (what later posts are compared with),
    # then the claim's counts: a retry after the post's write keeps its claim and counts it once
    worth = claiming.check_worthiness(services.posts, post)
    joined = claiming.join(services.claims, services.posts, tenant, post, found, image, worth=worth)
    services.posts.remember(tenant, post, found.lang, joined.fields)
    claim = claiming.count(services.claims, tenant, post, found.lang, found, joined)
    rules = services.review_rules.for_tenant(tenant)
    trending = claiming.trend(services.claims, rules, tenant, claim, post["id"])
    result = found.to_dict()
    best = best_score(found)
    # the review item first: a post whose item could not be written is retried, not delivered
    services.review.record_item(tenant, post["id"], post["text"], found.lang, post.get("date"),
                                post.get("url"), found, image=image)
    # above the tenant's tier, when opted in
    auto_confirm(services.review, services.review_rules, services.recalibrations, tenant, post["id"], found)
    deliveries = []
    subscriptions = services.webhooks.all(tenant)
    for sub in subscriptions:
        if wants(sub, Event.POST_MATCHED, result["lang"], best):
            did = services.webhooks.plan(sub, Event.POST_MATCHED, {"post": post, "match": result,
                                                                      "claim": joined.to_dict()},
                                         dedupe_key=post["id"])
            enqueue_delivery(did)
            deliveries.append({"subscription_id": sub["id"], "delivery_id": did})
    if trending is not None:  # the spread alert, once per claim and window
        hot, n = trending
        for sub in subscriptions:
            if any(wants(sub, Event.CLAIM_TRENDING, lang, None) for lang in hot.langs or [None]):
                did = services.webhooks.plan(sub, Event.CLAIM_TRENDING,
                                             trending_payload(hot, n, rules.trending_window_hours),
                                             dedupe_key=f"{hot.id}:{hot.trending_at}")
                enqueue_delivery(did)
                deliveries.append({"subscription_id": sub["id"], "delivery_id": did})
    out = {"post_id": post["id"], "lang": result["lang"], "best_score": best, "match": result,
           "claim": joined.to_dict(), "deliveries": deliveries}
    if job["input"].get("channel"):  # a tipline message: its reply, after everything above
        from plugin.service.tipline import after_match

        out["tipline"] = after_match(services, job, found, joined.claim_id, services.queue_message)
    return out
