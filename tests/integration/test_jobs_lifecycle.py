"""No job stuck, none lost (issue 11, point 3), on the real Redis and OpenSearch: the retry policy
at its real value, a message that kills its worker every time, jobs a sweep must move, and a
failed post submitted again. The task bodies run here with a stand-in for Celery's task object;
the worker end to end is tests/integration/test_workers*.py."""
import uuid
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest
from celery.exceptions import Retry

from plugin.errors import BackendUnavailable
from plugin.service.jobs import JobKind, JobStatus
from workers import tasks

pytestmark = pytest.mark.integration


class FakeTask:
    """What ``workers.tasks._run`` reads of a bound Celery task."""

    def __init__(self, services, retries: int = 0) -> None:
        self.app = SimpleNamespace(factsieve=services)
        self.request = SimpleNamespace(retries=retries)
        self.soft_time_limit = 1

    def retry(self, exc=None, countdown=None):
        return Retry(exc=exc, when=countdown)


def new_job(services):
    job, _ = services.jobs.create(JobKind.RERANK, {"text": "x"})
    return job["id"]


def test_job_tasks_leave_the_retry_limit_to_the_settings():
    for task in (tasks.verify, tasks.rerank, tasks.ingest, tasks.process_post):
        assert task.max_retries is None  # Celery's default 3 would cut in before task_max_retries


def test_backend_errors_retry_exactly_task_max_retries_times(api_services):
    job_id = new_job(api_services)
    limit = api_services.settings.task_max_retries

    def down(services, job):
        raise BackendUnavailable("OpenSearch is down (test)")

    for retries in range(limit):
        with pytest.raises(Retry):
            tasks._run(FakeTask(api_services, retries), job_id, down)
        assert api_services.jobs.get(job_id)["status"] == JobStatus.QUEUED.value
    out = tasks._run(FakeTask(api_services, limit), job_id, down)
    assert out["status"] == JobStatus.FAILED.value
    assert api_services.jobs.get(job_id)["error"]["status"] == 503


def test_a_job_whose_worker_dies_every_time_fails(api_services):
    job_id = new_job(api_services)
    ran = []
    for _ in range(api_services.settings.job_max_deliveries):
        api_services.jobs.start(job_id)  # a start whose worker then died: no finish, no retry
    out = tasks._run(FakeTask(api_services), job_id, lambda s, j: ran.append(j))
    assert out["status"] == JobStatus.FAILED.value and not ran
    assert "died" in api_services.jobs.get(job_id)["error"]["detail"]


def test_sweep_fails_abandoned_running_jobs_and_resends_lost_queued_ones(api_services):
    jobs = api_services.jobs
    running, queued, fresh = new_job(api_services), new_job(api_services), new_job(api_services)
    jobs.start(running)
    later = datetime.now(timezone.utc) + timedelta(hours=2)
    api_services.kv.client.delete(api_services.kv.key("jobs-sweep-lock"))
    sent = []

    def resend(job, priority):
        sent.append(job)

    out = jobs.sweep(running_after_s=3600, queued_after_s=3600, resend=resend, now=later)
    assert out["failed"] >= 1 and out["resent"] >= 2
    assert jobs.get(running)["status"] == JobStatus.FAILED.value
    assert jobs.get(running)["error"]["title"] == "Job abandoned"
    assert {queued, fresh} <= {j["id"] for j in sent}
    again = jobs.sweep(running_after_s=3600, queued_after_s=3600, resend=resend, now=later)
    assert again["locked"] == 1  # one sweep at a time across workers
    api_services.kv.client.delete(api_services.kv.key("jobs-sweep-lock"))
    now = jobs.sweep(running_after_s=3600, queued_after_s=3600, resend=resend)
    assert jobs.get(fresh)["status"] == JobStatus.QUEUED.value and now["failed"] == 0


def test_a_failed_post_can_be_submitted_again(api_services):
    post = {"id": f"p-{uuid.uuid4().hex}", "text": "5G towers spread the virus", "lang": "en"}
    job, created = api_services.jobs.submit_post(post)
    assert created
    api_services.jobs.fail(job["id"], {"type": "about:blank", "title": "x", "status": 503, "detail": "down"})
    again, created = api_services.jobs.submit_post(post)
    assert created and again["id"] == job["id"] and again["status"] == JobStatus.QUEUED.value
    assert again["previous_error"]["detail"] == "down"
    same, created = api_services.jobs.submit_post(post)
    assert not created and same["status"] == JobStatus.QUEUED.value


def test_a_job_failing_on_an_unreachable_opensearch_names_no_address(api_services, caplog):
    """Issue 21 (medium 4): the job record is read by any key of the tenant; it says what failed,
    the worker log says where, and neither holds the credentials."""
    import json
    import logging

    from plugin.service.services import Services

    settings = api_services.settings.model_copy(update={
        "opensearch_url": "http://admin:s3cret@127.0.0.1:9", "opensearch_timeout_s": 2.0})
    down = Services(settings, embedder=api_services.embedder, kv=api_services.kv)
    job_id = new_job(down)
    limit = settings.task_max_retries

    def count(services, job):  # any OpenSearch call: the cluster is not there
        return {"n": services.store.count(services.settings.index)}

    with caplog.at_level(logging.WARNING):
        with pytest.raises(Retry):
            tasks._run(FakeTask(down, 0), job_id, count)
        queued = down.jobs.get(job_id)
        assert queued["last_error"]["status"] == 503 and "OpenSearch" in queued["last_error"]["detail"]
        out = tasks._run(FakeTask(down, limit), job_id, count)
    assert out["status"] == JobStatus.FAILED.value
    failed = down.jobs.get(job_id)
    assert failed["error"]["title"] == "Backend unavailable" and "OpenSearch" in failed["error"]["detail"]
    for record in (queued, failed, json.loads(api_services.kv.client.get(api_services.kv.key("job", job_id)))):
        text = json.dumps(record)
        assert "127.0.0.1" not in text and ":9" not in text and "s3cret" not in text
    assert "127.0.0.1:9" in caplog.text and "s3cret" not in caplog.text  # the operator's log
