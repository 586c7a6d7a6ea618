"""Tiny real MetaSchedule objects for the cost-model tests: one TE matmul task, sampled schedules, SYNTHETIC times;
a tiny tuning-log folder."""

from __future__ import annotations

import json

import pytest
import torch
import tvm
from tvm import te
from tvm.s_tir import Schedule
from tvm.s_tir import meta_schedule as ms

LLVM = tvm.target.Target({"kind": "llvm", "num-cores": 2})


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    """Two shared cores: one torch thread is ~10x faster here than torch's default."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def matmul_relu(n: int = 32) -> tvm.IRModule:
    a, b = te.placeholder((n, n), name="A"), te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), "k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    d = te.compute((n, n), lambda i, j: te.max(c[i, j], 0.0), name="D")
    return tvm.IRModule({"main": te.create_prim_func([a, b, d]).with_attr("global_symbol", "main")})


def sampled(mod: tvm.IRModule, seed: int) -> tuple[Schedule, int]:
    """A schedule with sampled tiles, and its inner j tile (the vector-friendly extent)."""
    sch = Schedule(mod, seed=seed)
    i, j, k = sch.get_loops(sch.get_sblock("C"))
    i0, i1 = sch.split(i, sch.sample_perfect_tile(i, n=2))
    j_tiles = sch.sample_perfect_tile(j, n=2)
    j0, j1 = sch.split(j, j_tiles)
    sch.reorder(i0, j0, k, i1, j1)
    sch.parallel(i0)
    return sch, int(sch.get(j_tiles[1]))


def synthetic_run_secs(inner_j: int) -> list[float]:
    """SYNTHETIC run_secs (not measured): faster the longer the inner j tile, so there is something to learn."""
    return [1e-4 * (1.0 + 32.0 / inner_j)] * 2


def make_task(n: int = 32, count: int = 12, first_seed: int = 1):
    """(context, candidates, results) of one task; results carry SYNTHETIC run_secs."""
    from relay_passes.schedule import feature_context

    mod = matmul_relu(n)
    context = feature_context(mod, LLVM)
    candidates, results = [], []
    for seed in range(first_seed, first_seed + count):
        sch, inner_j = sampled(mod, seed)
        candidates.append(ms.MeasureCandidate(sch, ms.arg_info.ArgInfo.from_prim_func(sch.mod["main"])))
        results.append(ms.runner.RunnerResult(synthetic_run_secs(inner_j), None))
    return context, candidates, results


@pytest.fixture(scope="session")
def task():
    return make_task()


@pytest.fixture(scope="session")
def task16():
    return make_task(16, count=6, first_seed=50)


@pytest.fixture(scope="session")
def pretrained(task16, tmp_path_factory):
    """Boosters trained on another task (task16, SYNTHETIC times), saved as the ranker checkpoint pair ``OUT``
    ("rows") and ``OUT-trace`` ("trace"); returns the "rows" booster file."""
    import numpy as np

    from tvm_cost.tuning.ranker import save_ranker, train_booster
    from tvm_cost.tuning.ranker_model import RankerCostModel, trace_checkpoint
    from tvm_cost.tuning.replay import measured_latency_ms

    context, candidates, results = task16
    latency, group = np.array([measured_latency_ms(r) for r in results]), np.zeros(len(candidates))
    out = tmp_path_factory.mktemp("ranker") / "llvm-2core-ranker"
    for features in ("trace", "rows"):
        rows = RankerCostModel(None, features=features).features(context, candidates)
        weights = save_ranker(out if features == "rows" else trace_checkpoint(out), train_booster(
            rows, latency, group, rounds=20), features=features, extra={"data": "SYNTHETIC"})
    return weights


LLVM_1CORE = tvm.target.Target({"kind": "llvm", "num-cores": 1})


@pytest.fixture(scope="module")
def tiny_logs(tmp_path_factory):
    """Two matmul tasks (two 'families') of 8 real schedules each, with SYNTHETIC run_secs, plus tasks.json."""
    from tvm_cost.data.kernel_dataset import KernelDataset

    root = tmp_path_factory.mktemp("logs")
    db = ms.database.JSONDatabase(path_workload=str(root / "database_workload.json"),
                                  path_tuning_record=str(root / "database_tuning_record.json"))
    for n in (32, 16):
        mod = matmul_relu(n)
        wl = db.commit_workload(mod)
        for seed in range(1, 9):
            sch, inner_j = sampled(mod, seed)
            args = ms.arg_info.ArgInfo.from_prim_func(sch.mod["main"])
            run_secs = synthetic_run_secs(inner_j)
            db.commit_tuning_record(ms.database.TuningRecord(sch.trace, wl, run_secs, LLVM_1CORE, args))
    tasks = KernelDataset(root, target_spec={"kind": "llvm", "num-cores": 1}).tasks
    (root / "tasks.json").write_text(json.dumps({h: {"models": [f"zoo:fam{i},batch=1"], "task_name": f"t{i}"}
                                                 for i, h in enumerate(tasks)}))
    (root / "MANIFEST.json").write_text(json.dumps({"target": {"kind": "llvm", "num-cores": 1},
                                                   "cpu_model": "SYNTHETIC CPU"}))
    return root
