"""The Celery configuration derived from the settings (no broker needed)."""
from plugin.service.jobs import JobKind
from plugin.settings import Settings
from workers.app import celery_config, create_celery
from workers.names import ANSWER_ASKERS, CHANNEL_SEND, DELIVER, QUEUES, ROUTES, TASKS


def test_reliability_settings():
    conf = celery_config(Settings(redis_prefix="nsp", broker_visibility_timeout_s=7200, task_time_limit_s=100))
    assert conf["task_acks_late"] and conf["task_reject_on_worker_lost"]
    assert conf["worker_prefetch_multiplier"] == 1
    assert (conf["task_time_limit"], conf["task_soft_time_limit"]) == (100, 90)
    transport = conf["broker_transport_options"]
    assert transport["global_keyprefix"] == "nsp:celery:" and transport["visibility_timeout"] == 7200
    assert transport["unacked_restore_interval"] == 10
    assert conf["result_backend_transport_options"] == {"global_keyprefix": "nsp:celery:"}
    assert transport["priority_steps"] == list(range(10)) and transport["sep"] == ":"
    assert "queue_order_strategy" not in transport  # queues round-robin at each priority
    assert celery_config(Settings(broker_visibility_timeout_s=4))["broker_transport_options"]["unacked_restore_interval"] == 1


def test_every_job_kind_has_a_task_and_every_task_a_queue():
    assert set(TASKS) == set(JobKind)
    assert set(ROUTES) == set(TASKS.values()) | {DELIVER, CHANNEL_SEND, ANSWER_ASKERS}
    assert set(ROUTES.values()) == set(QUEUES)


def test_the_tasks_are_registered_under_their_names():
    app = create_celery(Settings())
    app.loader.import_default_modules()
    assert set(ROUTES) <= set(app.tasks)


def test_the_celery_app_gives_its_services_a_job_sender():
    """How a waiting job is sent once its tenant has a free slot: by its task name, under its id,
    at the priority the job store gives it."""
    app = create_celery(Settings())
    calls = []
    app.send_task = lambda name, **kw: calls.append((name, kw))
    app.factsieve.send_job({"id": "job_1", "kind": "verify"}, 7)
    assert calls == [(TASKS[JobKind.VERIFY], {"args": ["job_1"], "task_id": "job_1", "priority": 7})]
