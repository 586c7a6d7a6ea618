"""TVM's sum-of-tasks estimate: every task timed alone once, weights from the model, resumable store."""

from __future__ import annotations

import json

import pytest

from tvm_cost.errors import TvmCostError
from tvm_cost.estimation.task_sum import task_sum_ms, task_times
from tvm_cost.importer import import_model
from tvm_cost.targets import resolve_target

TARGET = '{"kind": "llvm", "num-cores": 1}'


def test_tasks_are_timed_once_and_weighted(tmp_path):
    store = tmp_path / "tasks.jsonl"
    mod = import_model("zoo:mlp,width=32,depth=3,in_features=64,batch=2").mod
    seen: list[tuple[str, bool]] = []
    times = task_times(mod, resolve_target(TARGET), store, repeat=2, min_repeat_ms=1,
                       on_task=lambda name, new: seen.append((name, new)))
    assert times and all(t.latency_ms > 0 and t.weight >= 1 for t in times)
    assert any(t.weight > 1 for t in times)  # the repeated hidden layer is one task called several times
    assert task_sum_ms(times) == pytest.approx(sum(t.weight * t.latency_ms for t in times))
    lines = [json.loads(line) for line in store.read_text().splitlines()]
    assert len(lines) == len(times) and all(r["tvm"] and r["target"]["kind"] == "llvm" for r in lines)
    # a second model sharing the tasks measures nothing new
    again = task_times(mod, resolve_target(TARGET), store, on_task=lambda name, new: seen.append((name, new)))
    assert [t.latency_ms for t in again] == [t.latency_ms for t in times]
    assert [new for _, new in seen] == [True] * len(times) + [False] * len(times)


def test_gpu_targets_are_refused(tmp_path):
    mod = import_model("zoo:mlp,width=8,depth=1,in_features=8,batch=1").mod
    with pytest.raises(TvmCostError, match="needs its device"):
        task_times(mod, resolve_target("cuda-sm80"), tmp_path / "t.jsonl")
