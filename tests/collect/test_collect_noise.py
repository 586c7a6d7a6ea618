"""The noise summary: spreads, drift from the stored time, and rank agreement of re-measured records."""
import pytest

from tvm_cost.collect.noise import spread, summarize


def _row(workload: str, stored: float, samples: list[float]) -> dict:
    return {"workload": workload, "stored_secs": stored, "samples_secs": samples, **spread(samples)}


def test_summary_reports_drift_and_ranks_only_where_a_workload_has_three_records():
    rows = [
        _row("a", 1.0, [1.1, 1.1, 1.1]),    # drift 10%
        _row("a", 2.0, [2.0, 2.0, 2.0]),    # drift 0%
        _row("a", 3.0, [2.5, 2.5, 2.5]),    # drift 1/6, ranks of "a" kept
        _row("b", 4.0, [1.5, 1.5, 1.5]),    # drift 62.5%, out of the pooled order
        _row("b", 5.0, [5.0, 5.0, 5.0]),    # drift 0%, still too few in "b" to rank
        {"workload": "c", "stored_secs": 1.0, "samples_secs": []},  # failed re-measurement
    ]
    s = summarize(rows)
    assert s["records"] == 6 and s["remeasured"] == 5
    assert s["median_abs_drift"] == pytest.approx(0.1)
    assert s["median_rel_std"] == 0
    assert set(s["spearman_within_workload"]) == {"a"}
    assert s["spearman_within_workload"]["a"] == pytest.approx(1.0)
    assert s["spearman_within_mean"] == pytest.approx(1.0)
    assert s["spearman_pooled"] == pytest.approx(0.7)
