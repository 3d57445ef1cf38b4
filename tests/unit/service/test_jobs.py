"""The jobs index bodies (pure)."""
from plugin.service.jobs import JobStatus, jobs_index_bodies


def test_jobs_index_template_and_first_index():
    name, template, first, create = jobs_index_bodies("factsieve-jobs", 1)
    assert name == "factsieve-factsieve-jobs" and first == "factsieve-jobs-v1"
    assert template["index_patterns"] == ["factsieve-jobs-v*"]
    assert template["template"]["settings"]["index"]["number_of_replicas"] == 1
    props = template["template"]["mappings"]["properties"]
    assert props["result"] == {"type": "object", "enabled": False}
    assert template["template"]["mappings"]["dynamic"] == "strict"
    assert create == {"aliases": {"factsieve-jobs": {}}}


def test_finished_statuses():
    assert [s.value for s in JobStatus if s.finished] == ["succeeded", "failed"]


# -- post job ids: one encoding for every tenant, legacy jobs still their owner's ------------------
import json  # noqa: E402
import pytest  # noqa: E402

from plugin.errors import NotFound  # noqa: E402
from plugin.service.jobs import JobKind, JobStore, legacy_post_job_id, post_job_id  # noqa: E402
from plugin.kv import KV  # noqa: E402
from plugin.settings import Settings  # noqa: E402


class FakeRedis:
    """The Redis commands ``JobStore`` uses to create, read and write a job."""

    def __init__(self):
        self.data = {}

    def get(self, key):
        return self.data.get(key)

    def set(self, key, value, ex=None, nx=False):
        if nx and key in self.data:
            return None
        self.data[key] = value
        return True

    def delete(self, *keys):
        return sum(self.data.pop(k, None) is not None for k in keys)


class FakeStore:
    """The jobs index: ``find`` and ``put`` (the index itself counts as installed)."""

    def __init__(self):
        self.docs = {}

    def find(self, alias, job_id):
        return self.docs.get(job_id)

    def put(self, alias, job_id, body):
        self.docs[job_id] = json.loads(json.dumps(body))


class NoAdmission:
    """Admission (quota and fair dispatch, tested with real Redis in test_quota.py) out of the
    way: these tests are about job records, which need no Lua scripts."""

    def reserve(self, tenant, job_id, now):
        pass

    def place(self, tenant, job_id):
        return True

    def release(self, tenant, job_id=""):
        return []

    def priority(self, tenant):
        return 1


def job_store():
    settings = Settings()
    jobs = JobStore(KV(settings, client=FakeRedis()), FakeStore(), settings)
    jobs._index_ready = True
    jobs.admission = NoAdmission()
    return jobs


def store_legacy(jobs, job_id, post, tenant=None, where="redis"):
    """A post job as the earlier scheme wrote it (before tenants: no ``tenant`` field), live in
    Redis or finished long ago (only the jobs index still has it)."""
    from plugin.service.jobs import fingerprint

    job = {"id": job_id, "kind": "post", "status": "succeeded", "created_at": "2026-01-01T00:00:00",
           "attempts": 1, "ref": post["id"], "input": {"post": post, "fingerprint": fingerprint(post)},
           "result": {"post_id": post["id"]}}
    if tenant is not None:
        job["tenant"] = tenant
    if where == "redis":
        jobs.kv.client.set(jobs.kv.key("job", job_id), json.dumps(job))
    else:
        jobs.store.put(jobs.alias, job_id, job)


def test_post_job_ids_are_unambiguous_for_every_tenant():
    # the earlier scheme: the default tenant's "a\x1fp-1" was tenant a's "p-1"
    assert legacy_post_job_id("a\x1fp-1") == legacy_post_job_id("p-1", "a")
    assert post_job_id("a\x1fp-1") != post_job_id("p-1", "a")
    assert post_job_id("p-1") != post_job_id("p-1", "a") != post_job_id("p-1", "b")
    assert post_job_id("p-1", "a") == post_job_id("p-1", "a")  # deterministic: resubmits find it
    assert post_job_id("p-1") != legacy_post_job_id("p-1")


@pytest.mark.parametrize("tenant, where", [(None, "redis"), ("default", "redis"), ("a", "redis"),
                                           (None, "index"), ("a", "index")])
def test_a_legacy_post_job_is_still_found_by_its_owner(tenant, where):
    jobs = job_store()
    owner = tenant or "default"
    post = {"id": "p-1", "text": "Drinking bleach cures covid", "lang": "en"}
    store_legacy(jobs, legacy_post_job_id("p-1", owner), post, tenant, where)
    found = jobs.get_post("p-1", owner)
    assert found["id"] == legacy_post_job_id("p-1", owner) and found["status"] == "succeeded"
    again, created = jobs.submit_post(post, owner)
    assert not created and again["id"] == found["id"]  # a resubmission is still a duplicate


def test_a_job_forged_under_a_legacy_id_is_not_the_tenants():
    jobs = job_store()
    squat = {"id": "a\x1fp-1", "text": "squatted", "lang": "en"}
    store_legacy(jobs, legacy_post_job_id("p-1", "a"), squat, "default")  # the same old id
    with pytest.raises(NotFound, match="no post with id 'p-1'"):
        jobs.get_post("p-1", "a")
    job, created = jobs.submit_post({"id": "p-1", "text": "tenant a's own post", "lang": "en"}, "a")
    assert created and job["id"] == post_job_id("p-1", "a") and job["tenant"] == "a"
    assert jobs.get_post("p-1", "a")["id"] == job["id"]


def test_job_problems_are_scrubbed_when_recorded_and_when_read():
    jobs = job_store()
    job, _ = jobs.create(JobKind.RERANK, {"text": "x"})
    down = {"type": "about:blank", "title": "Backend unavailable", "status": 503,
            "detail": "OpenSearch is not reachable at http://admin:s3cret@127.0.0.1:9299 (search)"}
    requeued = jobs.requeue(job["id"], down, 2.0)
    assert requeued["last_error"]["detail"] == "OpenSearch is not reachable at <backend> (search)"
    failed = jobs.fail(job["id"], {**down, "detail": "the LLM at http://u:secret@[::1]:8089/v1 is down"})
    assert failed["error"]["detail"] == "the LLM at <backend> is down"
    raw = jobs.kv.client.get(jobs.kv.key("job", job["id"]))
    assert "s3cret" not in raw and "secret" not in raw and "127.0.0.1" not in raw
    assert "secret" not in json.dumps(jobs.store.docs[job["id"]])  # the jobs index's copy too
    # a record written before the scrub existed leaves scrubbed too
    legacy = json.loads(raw)
    legacy["error"] = down
    jobs.kv.client.set(jobs.kv.key("job", job["id"]), json.dumps(legacy))
    assert "127.0.0.1" not in jobs.get(job["id"])["error"]["detail"]
