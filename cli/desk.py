"""`factsieve demo`'s desk part: the sample posts go through the post job (as a worker runs it,
here in-process), so the desk's queue has items, and a reviewer key to sign in with."""
from __future__ import annotations

from typing import Any

from plugin.owners import DEFAULT_TENANT
from plugin.service.services import Services


def demo_desk(services: Services, posts: list[dict[str, Any]], url: str) -> None:
    from plugin.service.handlers import run_post
    from plugin.service.keys import Scope

    jobs = services.jobs
    queued = 0
    for n, post in enumerate(posts, 1):
        body = {"id": f"demo-{n}", "text": post["text"], "source": "demo"}
        job, created = jobs.submit_post(body, DEFAULT_TENANT)
        if created or job["status"] != "succeeded":
            job = jobs.start(job["id"])
            jobs.finish(job["id"], run_post(services, job, lambda _delivery: None))
            queued += 1
    _, key = services.keys.create("demo reviewer", Scope.WRITE, DEFAULT_TENANT)
    print(f"\nthe desk: {url}  ({queued} sample posts newly queued for review; start the API with "
          f"`make serve`)\n  sign in with the key {key}")
