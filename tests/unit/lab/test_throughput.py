"""Where the time of posts through the queue goes: CPU accounting and job timings (pure)."""
import pytest

from plugin.lab.throughput import (cpu_per_post, descendants, job_timings, jobs_summary, limit_reading,
                                   machine_cpu, nodes_cpu_s, parse_proc_stat, process_stat, spread,
                                   tree_cpu_s)

STAT_BEFORE = """cpu  100 0 50 800 50 0 0 0 0 0
cpu0 50 0 25 400 25 0 0 0 0 0
cpu1 50 0 25 400 25 0 0 0 0 0
intr 12345
"""
# 400 ticks later on 2 cores: 150 user, 50 system, 180 idle, 20 iowait
STAT_AFTER = """cpu  250 0 100 980 70 0 0 0 0 0
cpu0 125 0 50 490 35 0 0 0 0 0
cpu1 125 0 50 490 35 0 0 0 0 0
"""


def test_proc_stat_is_the_aggregate_line_and_the_core_count():
    s = parse_proc_stat(STAT_BEFORE)
    assert (s["user"], s["system"], s["idle"], s["iowait"], s["steal"], s["cpus"]) == (100, 50, 800, 50, 0, 2)


def test_proc_stat_without_a_cpu_line_is_refused():
    with pytest.raises(ValueError):
        parse_proc_stat("intr 1\n")


def test_machine_cpu_is_busy_ticks_over_all_ticks():
    got = machine_cpu(parse_proc_stat(STAT_BEFORE), parse_proc_stat(STAT_AFTER))
    # busy 200 of 400 ticks: half of 2 cores; iowait 20 of 400
    assert got == {"cpus": 2, "busy_cores": 1.0, "busy_fraction": 0.5, "iowait_fraction": 0.05,
                   "steal_fraction": 0.0}


def test_machine_cpu_of_no_interval_is_zero():
    s = parse_proc_stat(STAT_BEFORE)
    assert machine_cpu(s, s)["busy_cores"] == 0.0


@pytest.mark.parametrize("line, expected", [
    ("42 (python) S 1 42 42 0 -1 4194560 10 0 0 0 300 70 0 0 20 0 1 0 5", (1, 300, 70)),
    # a command name with spaces and parentheses: fields count from the last ')'
    ("43 (celery (w) x) R 42 42 42 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0 5", (42, 5, 6)),
])
def test_process_stat_is_ppid_utime_stime(line, expected):
    assert process_stat(line) == expected


def test_descendants_walk_the_tree_from_the_roots():
    parents = {1: 0, 10: 1, 11: 10, 12: 10, 13: 11, 20: 1}
    assert descendants(parents, [10]) == {10, 11, 12, 13}
    assert descendants(parents, [20, 12]) == {20, 12}
    assert descendants(parents, [99]) == {99}


def test_tree_cpu_counts_each_process_since_the_first_sample():
    before = {10: (1, 100, 50), 11: (10, 10, 0), 30: (1, 1000, 0)}
    # 10 gained 30 ticks, 11 gained 5, 12 started since (20 ticks); 30 is not under the root
    after = {10: (1, 120, 60), 11: (10, 15, 0), 12: (10, 20, 0), 30: (1, 2000, 0)}
    assert tree_cpu_s(before, after, [10], clk_tck=100) == pytest.approx(0.55)


def test_nodes_cpu_is_the_delta_per_node_name():
    def body(**ms):
        return {"nodes": {nid: {"name": f"node-{nid}", "process": {"cpu": {"total_in_millis": v}}}
                          for nid, v in ms.items()}}
    assert nodes_cpu_s(body(a=1000, b=500), body(a=3500, b=700, c=9000)) == {"node-a": 2.5, "node-b": 0.2}


JOB = {"created_at": "2026-11-27T10:00:00.000+00:00", "started_at": "2026-11-27T10:00:01.500+00:00",
       "finished_at": "2026-11-27T10:00:01.800+00:00", "attempts": 1,
       "result": {"match": {"took_ms": 120.0}}}


def test_job_timings_split_queue_run_and_match():
    t = job_timings(JOB)
    assert t == pytest.approx({"queue_s": 1.5, "run_s": 0.3, "end_to_end_s": 1.8, "match_s": 0.12,
                               "bookkeeping_s": 0.18})


def test_a_job_without_its_timestamps_is_not_timed():
    assert job_timings({**JOB, "finished_at": None}) is None
    assert "match_s" not in job_timings({**JOB, "result": None})


def test_spread_is_nearest_rank():
    assert spread([1.0, 2.0, 3.0, 4.0]) == {"p50": 3.0, "p95": 4.0, "mean": 2.5}
    assert spread([]) is None


def test_jobs_summary_rate_is_on_the_queue_clock():
    second = {**JOB, "created_at": "2026-11-27T10:00:00.100+00:00", "started_at": "2026-11-27T10:00:01.800+00:00",
              "finished_at": "2026-11-27T10:00:02.000+00:00", "attempts": 2}
    s = jobs_summary([JOB, second, {"created_at": None}])
    # 2 jobs from 10:00:00.000 to 10:00:02.000
    assert (s["jobs_timed"], s["window_s"], s["posts_per_s"], s["redelivered"]) == (2, 2.0, 1.0, 1)
    assert s["queue_s"]["p95"] == pytest.approx(1.7)
    assert jobs_summary([]) == {"jobs_timed": 0}


def test_cpu_per_post_puts_unexplained_busy_time_in_other():
    machine = {"cpus": 2, "busy_cores": 1.5, "busy_fraction": 0.75}
    # 10 s busy at 1.5 cores = 15 CPU s; the components explain 12 of them, over 100 posts
    got = cpu_per_post({"celery_workers": 8.0, "opensearch": 4.0}, machine, wall_s=10.0, posts=100)
    assert got == {"cpu_ms_per_post": {"celery_workers": 80.0, "opensearch": 40.0, "other": 30.0},
                   "components_ms_per_post": 120.0, "cpu_bound_posts_per_s": pytest.approx(16.67)}
    assert cpu_per_post({}, machine, wall_s=0, posts=100) == {}


@pytest.mark.parametrize("busy, expected", [(0.95, "CPU: the machine's 2 cores were 95% busy; the largest "
                                                   "cost per post is celery_workers"),
                                            (0.4, "not CPU (40% busy) with 1 worker process(es) at 3.0 posts/s")])
def test_the_limit_is_read_off_the_numbers(busy, expected):
    per = {"cpu_ms_per_post": {"celery_workers": 80.0, "opensearch": 40.0, "other": 5.0}}
    assert limit_reading({"cpus": 2, "busy_fraction": busy}, per, 3.0, 1).startswith(expected)


def test_other_work_larger_than_the_run_is_named():
    per = {"cpu_ms_per_post": {"celery_workers": 80.0, "opensearch": 40.0, "other": 300.0}}
    got = limit_reading({"cpus": 2, "busy_fraction": 0.99}, per, 3.0, 1)
    assert "celery_workers (80.0 ms of the run's 120.0 ms)" in got
    assert got.endswith("other work on the machine took more (300.0 ms per post): measure on a quiet machine")
