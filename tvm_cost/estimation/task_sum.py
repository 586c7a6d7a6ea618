"""TVM's own end-to-end estimate: the sum over a model's tasks of (calls in the model) x (the task's latency
measured alone), as Ansor and MetaSchedule add up tuned tasks. A baseline that needs every kernel measured.

Each distinct kernel (keyed by workload hash and target) is compiled alone with its default schedule and timed
with the runtime's time evaluator on random inputs; the times are appended to a JSON-lines file with their
provenance, so later models reuse them and an interrupted run resumes.
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tvm_cost.e2e.store import E2EStore
from tvm_cost.errors import TvmCostError


@dataclass(frozen=True)
class TaskTime:
    """One task of a model: its workload hash, MetaSchedule name, calls per inference and ms per call."""

    workload_hash: str
    task_name: str
    weight: int
    latency_ms: float


def _time_alone(func: Any, target: Any, *, repeat: int, min_repeat_ms: int) -> list[float]:
    """ms per call of a PrimFunc compiled alone (default schedule), one value per repeat."""
    import tvm
    from tvm.s_tir import meta_schedule as ms

    from relay_passes.schedule import workload_module

    rt = tvm.compile(workload_module(func), target=target).jit()
    dev = tvm.cpu()
    rng = np.random.default_rng(0)
    args = []
    for info in ms.arg_info.ArgInfo.from_prim_func(func):
        shape, dtype = [int(d) for d in info.shape], str(info.dtype)
        values = rng.integers(0, 2, size=shape) if "int" in dtype else rng.standard_normal(shape)
        args.append(tvm.runtime.tensor(values.astype(dtype), dev))
    timer = rt.time_evaluator("main", dev, number=1, repeat=repeat, min_repeat_ms=min_repeat_ms)
    return [float(r) * 1e3 for r in timer(*args).results]


def task_times(
    mod: Any,
    target: Any,
    store: str | Path,
    *,
    repeat: int = 3,
    min_repeat_ms: int = 10,
    on_task: Callable[[str, bool], None] | None = None,
) -> list[TaskTime]:
    """The tasks of Relax module `mod` on `target` (an llvm `ResolvedTarget`), each timed alone once per store.

    Args:
        mod: A static Relax module (see `tvm_cost.importer.import_model`).
        target: `tvm_cost.targets.resolve_target` of an llvm target (timed on this CPU).
        store: JSON-lines file of task times; new ones are appended.
        repeat, min_repeat_ms: Time-evaluator settings; the median of the repeats is the task's time.
        on_task: Called with (task name, whether it was measured now) for each task.
    """
    import tvm_ffi
    from tvm.s_tir import meta_schedule as ms

    from relay_passes.lower import lower
    from relay_passes.schedule import workload_module
    from tvm_cost.e2e.run import versions

    tvm_target = target.tvm_target()
    if tvm_target.kind.name != "llvm":
        raise TvmCostError(f"task timing runs on this machine's CPU; target kind {tvm_target.kind.name!r} needs "
                           "its device")
    db = E2EStore(store)
    known = {(r["workload_hash"], r["target_name"]): r for r in db.records() if r.get("status") == "ok"}
    out = []
    for task in ms.relax_integration.extract_tasks(lower(mod, tvm_target).mod, tvm_target):
        func = task.dispatched[0]["main"]
        shash = str(tvm_ffi.structural_hash(workload_module(func)))
        record = known.get((shash, target.name))
        measured_now = record is None
        if record is None:
            repeats = _time_alone(func, tvm_target, repeat=repeat, min_repeat_ms=min_repeat_ms)
            record = {"key": f"{shash}|{target.name}", "status": "ok", "workload_hash": shash,
                      "task_name": task.task_name, "target": target.target_json, "target_name": target.name,
                      "hardware": target.hardware.name, "latency_ms": statistics.median(repeats),
                      "repeats_ms": repeats, "repeat": repeat, "min_repeat_ms": min_repeat_ms,
                      "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), **versions()}
            db.append(record)
            known[(shash, target.name)] = record
        if on_task is not None:
            on_task(task.task_name, measured_now)
        out.append(TaskTime(shash, task.task_name, int(task.weight), float(record["latency_ms"])))
    return out


def task_sum_ms(times: list[TaskTime]) -> float:
    """TVM's estimate: sum of calls x ms over the tasks."""
    return float(sum(t.weight * t.latency_ms for t in times))
