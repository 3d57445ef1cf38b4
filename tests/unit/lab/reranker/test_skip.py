"""``train-reranker skip``'s threshold from reranked heads (pure: hand-checked tables)."""
import pytest

from plugin.lab.reranker.skip import skip_table


def test_the_lowest_threshold_within_the_loss_is_chosen_and_each_dataset_s_loss_shows():
    samples = [("a", 0.99, 1.0, 1.0), ("a", 0.95, 1.0, 1.0), ("a", 0.92, 0.5, 1.0),   # sure, and one fixed at 0.92
               ("b", 0.60, 0.0, 1.0), ("b", 0.40, 0.5, 0.5), ("b", None, 0.0, 1.0)]  # unsure, one without confidence
    got = skip_table(samples, thresholds=(0.5, 0.9, 0.93), max_loss=0.001)
    assert got["MAP@5"] == {"first_stage": pytest.approx(0.5, abs=1e-4), "reranked": pytest.approx(0.9167, abs=1e-4)}
    rows = {r["skip_at"]: r for r in got["table"]}
    assert rows[0.5]["skipped"] == pytest.approx(4 / 6, abs=1e-4) and rows[0.5]["loss"] == pytest.approx(1.5 / 6, abs=1e-4)
    assert rows[0.9]["loss"] == pytest.approx(0.5 / 6, abs=1e-4)
    assert rows[0.93]["loss"] == 0.0 and rows[0.93]["per_dataset"]["a"] == {"posts": 3, "loss": 0.0, "skipped": pytest.approx(0.6667, abs=1e-4)}
    assert rows[0.93]["per_dataset"]["b"]["skipped"] == 0.0
    assert got["skip_at"] == 0.93 and got["posts"] == 6


def test_no_threshold_within_the_loss_means_no_skipping():
    assert skip_table([("a", 0.99, 0.0, 1.0)], thresholds=(0.9,), max_loss=0.001)["skip_at"] is None
    assert skip_table([])["skip_at"] is None
