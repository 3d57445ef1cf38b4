"""``factsieve learn simulate`` end to end on the bundled CLEF slice: the post job, the queue, an
oracle reviewer, the refit speed and the scoring, in a namespace of its own that is gone after."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import settings_env

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SLICE = ROOT / "samples" / "clef2020"


def simulate(settings, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli.main", "learn", "simulate", "--dataset", str(SLICE), *args],
                          check=False, cwd=ROOT, env=settings_env(settings), capture_output=True, text=True,
                          timeout=600)


def test_simulate_replays_a_split_through_the_queue_and_scores_the_other(settings, store):
    done = simulate(settings, "--decide-split", "train", "--eval-split", "dev", "--batches", "10,25")
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["decide_split"] == "train" and report["eval_split"] == "dev"
    assert {"MAP@5", "S@1", "S@10", "ECE@1", "auto_tier"} <= set(report["before"])
    # scored over the eval split's queries only: the slice's dev queries are mostly found
    assert report["before"]["S@10"] > 0.5, report["before"]
    assert [b["decisions"] for b in report["batches"]] == [10, 25]
    last = report["batches"][-1]
    assert sum(last["actions"].values()) == 25
    assert "at least 50 are needed" in last["recalibrate"]["refused"]  # too few: refused, not fitted
    assert last["reranker"] is None
    tenant = report["tenant"]
    # nothing of the simulation is left behind
    left = [i for i in store.indices_matching("sim-*") if tenant.removeprefix("sim-") in i]
    assert left == []


def test_simulate_names_a_split_that_is_not_there(settings):
    done = simulate(settings, "--decide-split", "nope", "--eval-split", "dev", "--batches", "10")
    assert done.returncode == 2
    assert "split 'nope' has no labelled query" in done.stderr and "splits: dev, test, train" in done.stderr
