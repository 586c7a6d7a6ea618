"""Re-measuring bench runs' best schedules: the summary compares kinds per task, and a run without records is
refused clearly. (The round-robin timing of real databases is in test_bench.py's dummy bench.)"""

from __future__ import annotations

import pytest

from tvm_cost.errors import TvmCostError
from tvm_cost.tuning.remeasure import best_record, summarize_remeasured


def _row(task: str, kind: str, seed: int, tuned: float, remeasured: float | None) -> dict:
    """A SYNTHETIC re-measure row."""
    return {"task": task, "task_name": f"task{task}", "seed": seed, "kind": kind, "tuned_ms": tuned,
            "remeasured_ms": remeasured, "samples_ms": [] if remeasured is None else [remeasured]}


def test_summary_divides_by_the_better_reference_per_task_and_column():
    rows = [
        _row("a", "xgb-warm16", 0, 1.0, 1.2), _row("a", "xgb-warm16", 1, 1.0, 1.2),
        _row("a", "gnn", 0, 1.1, 1.2), _row("a", "gnn", 1, 1.1, 1.2),
        _row("b", "xgb-warm16", 0, 2.0, 2.0), _row("b", "gnn", 0, 4.0, None),  # gnn's best failed to run again
    ]
    s = summarize_remeasured(rows)
    assert s["tasks"] == 2 and s["seeds"] == [0, 1]
    assert s["best_vs_reference_geomean"]["xgb-warm16"] == {"tuned": pytest.approx(1.0), "remeasured": 1.0}
    # tuned: a 1.1, b 2.0 -> sqrt(2.2); re-measured: only a, where the gap vanished
    assert s["best_vs_reference_geomean"]["gnn"]["tuned"] == pytest.approx(2.2 ** 0.5)
    assert s["best_vs_reference_geomean"]["gnn"]["remeasured"] == pytest.approx(1.0)
    assert s["tuned_over_remeasured_median"] == {"xgb-warm16": pytest.approx(1.0 / 1.2),
                                                 "gnn": pytest.approx(1.1 / 1.2)}
    assert s["paired"] == {"gnn": {"remeasured_geomean": pytest.approx(1.0), "faster": "0/2"}}  # b's gnn: no timing


def test_paired_compares_run_by_run():
    rows = [_row("a", "xgb-warm16", 0, 1.0, 1.0), _row("a", "gnn", 0, 1.0, 0.5),
            _row("a", "xgb-warm16", 1, 1.0, 2.0), _row("a", "gnn", 1, 1.0, 4.0)]
    s = summarize_remeasured(rows)
    assert s["best_vs_reference_geomean"]["gnn"]["remeasured"] == pytest.approx(2.25 / 1.5)  # medians over seeds
    assert s["paired"]["gnn"] == {"remeasured_geomean": pytest.approx(1.0), "faster": "1/2"}  # 0.5 and 2


def test_a_corrupt_store_is_refused(tmp_path):
    from tvm_cost.tuning.remeasure import remeasure_runs

    (tmp_path / "remeasure.jsonl").write_text('{"task": "a", "seed": 0}\n{broken\n')
    with pytest.raises(TvmCostError, match=r"remeasure.jsonl:2: not a re-measure row"):
        remeasure_runs([], tmp_path, times=1, measurers=lambda: (None, None), store=tmp_path / "remeasure.jsonl")


def test_a_run_without_records_is_refused(tmp_path):
    with pytest.raises(TvmCostError, match="--keep-records"):
        best_record(tmp_path / "missing", 16)
