"""Runs one MetaSchedule tune with the GNN cost model in a fresh process and prints a JSON summary.

A subprocess because the tune imports only the CPU tensor intrinsics (`tvm_cost.collect.fast.
preload_tensor_intrinsics`: ~5 s instead of 20-40 s), a process-wide change other tests must not see.

    python tune_worker.py MODE[,MODE...] WORK_DIR      (MODE: dummy-tir, dummy-model, dummy-bench, real-tir)

Prints ``RESULT {mode: summary}``; each mode tunes with a fresh model into ``WORK_DIR/<mode>``.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def spy(model) -> dict[str, int]:
    """Count the calls MetaSchedule's C++ search makes into the Python methods (looked up at call time)."""
    calls = {"predict": 0, "update": 0}
    inner = model._inst  # noqa: SLF001
    for name in calls:
        method = getattr(inner, name)

        def counted(*args, _name=name, _method=method):
            calls[_name] += 1
            return _method(*args)

        setattr(inner, name, counted)
    return calls


def main(mode: str, work_dir: str) -> dict:
    import torch

    torch.set_num_threads(1)
    logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)
    from tuning_tasks import LLVM, matmul_relu
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.testing.dummy_object import DummyBuilder, DummyRunner

    from tvm_cost.collect.fast import preload_tensor_intrinsics
    from tvm_cost.tuning import GNNCostModel, GNNCostModelConfig, tune_model, tune_tir

    preload_tensor_intrinsics(LLVM)
    model = GNNCostModel(checkpoint=None, config=GNNCostModelConfig(hidden=32, layers=1, update_steps=2))
    calls = spy(model)
    search = ms.search_strategy.EvolutionarySearch(population_size=32, init_min_unmeasured=8, genetic_num_iters=1)
    # the default callbacks include RemoveBuildArtifact, which fails on the dummy artifact path
    dummy = {"builder": DummyBuilder(), "runner": DummyRunner(),
             "measure_callbacks": [ms.measure_callback.AddToDatabase(), ms.measure_callback.UpdateCostModel()]}
    if mode == "dummy-tir":
        db = tune_tir(matmul_relu(32), target=LLVM, cost_model=model, max_trials=16, work_dir=work_dir, seed=1,
                      num_trials_per_iter=8, strategy=search, **dummy)
    elif mode == "dummy-model":
        db = tune_model("zoo:mlp,width=16,depth=1,in_features=32", target=LLVM, cost_model=model, max_trials=8,
                        work_dir=work_dir, seed=1, num_trials_per_iter=4, strategy=search, **dummy)
    elif mode == "real-tir":  # default builder (persistent pool) + MetaSchedule's LocalRunner
        db = tune_tir(matmul_relu(16), target=LLVM, cost_model=model, max_trials=8, work_dir=work_dir, seed=1,
                      num_trials_per_iter=8, strategy=search)
    elif mode == "dummy-bench":  # two passes over the same store: the second must run nothing
        from tvm_cost.tuning import bench

        task = bench.BenchTask("0", "matmul_relu", 2 * 16**3, matmul_relu(16))
        store = bench.RunStore(Path(work_dir) / "runs.jsonl")
        kinds, labels = ("random", "xgb-warm16", "gnn"), []
        for _ in range(2):
            runs = bench.run_bench([task], kinds, [0], store=bench.RunStore(store.path), target=LLVM, max_trials=16,
                                   trials_per_iter=8, population_size=32, builder=DummyBuilder(),
                                   runner=DummyRunner(), measure_callbacks=dummy["measure_callbacks"],
                                   records_dir=Path(work_dir) / "records",
                                   on_run=lambda run, label: labels.append((run is not None, label)))
        from tvm_cost.tuning.remeasure import remeasure_runs

        made = []  # (builder, runner) pairs the re-measure asked for: none once every group is stored

        def measurers():
            made.append((DummyBuilder(), DummyRunner()))
            return made[-1]

        remeasured = [remeasure_runs(runs, Path(work_dir) / "records", times=3, measurers=measurers,
                                     store=Path(work_dir) / "remeasure.jsonl")
                      for _ in range(2)]
        return {"labels": labels, "runs": [[r.kind, r.trials] for r in runs], "remeasured": remeasured,
                "measurers_made": len(made)}
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    run_secs = [[float(s) for s in r.run_secs] if r.run_secs else None for r in db.get_all_tuning_records()]
    return {"calls": calls, "info": model.describe(), "run_secs": run_secs}


if __name__ == "__main__":
    modes, root = sys.argv[1].split(","), Path(sys.argv[2])
    print("RESULT " + json.dumps({mode: main(mode, str(root / mode)) for mode in modes}))
