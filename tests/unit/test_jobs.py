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
