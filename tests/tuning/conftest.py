"""Fixtures of the cost-model tests (`tuning_tasks` has the objects they are made of): tasks, pretrained boosters,
a tiny tuning-log folder."""

from __future__ import annotations

import json

import pytest
import torch
import tvm
from tvm.s_tir import meta_schedule as ms

from tuning_tasks import make_task, matmul_relu, sampled, synthetic_run_secs


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    """Two shared cores: one torch thread is ~10x faster here than torch's default."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


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
