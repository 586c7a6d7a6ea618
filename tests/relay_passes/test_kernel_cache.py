"""`KernelCache`: kernels shared across models are scheduled and featurized once, and the graphs do not change."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tvm
from tvm.s_tir import meta_schedule as ms

from relay_passes.build import graph_from_lowered
from relay_passes.lower import lower
from relay_passes.schedule import KernelCache, workload_module
from tvm_cost.data.external.nasbench201_relax import nb201_to_relax
from tvm_cost.features.arrays import graph_arrays
from tvm_cost.targets import resolve_target

SMALL: dict[str, Any] = {"channels": 4, "cells_per_stage": 1, "batch": 2}
CELLS = ("|nor_conv_1x1~0|+|skip_connect~0|none~1|+|avg_pool_3x3~0|nor_conv_1x1~1|nor_conv_3x3~2|",
         "|nor_conv_3x3~0|+|nor_conv_1x1~0|skip_connect~1|+|avg_pool_3x3~0|none~1|nor_conv_3x3~2|")


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("target", ["llvm", "cuda-2080ti"])
def test_cached_graphs_equal_uncached(target: str) -> None:
    resolved = resolve_target(target)
    cache = KernelCache()
    lowered = [lower(nb201_to_relax(cell, **SMALL), resolved.tvm_target()) for cell in CELLS]
    for low in lowered:
        cached = graph_from_lowered(low, resolved, batch_size=2, cache=cache)
        plain = graph_from_lowered(low, resolved, batch_size=2)
        assert _same(graph_arrays(cached), graph_arrays(plain))
        assert [n.task_name for n in cached.nodes] == [n.task_name for n in plain.nodes]
    assert cache.hits > 0 and cache.misses > 0  # the second network reuses kernels of the first
    misses = cache.misses
    graph_from_lowered(lowered[0], resolved, batch_size=2, cache=cache)
    assert cache.misses == misses  # a network seen before computes nothing new


def test_cache_keys_a_database_schedule_by_its_record(tmp_path) -> None:
    resolved = resolve_target({"kind": "llvm", "num-cores": 2})
    target = resolved.tvm_target()
    low = lower(nb201_to_relax(CELLS[0], **SMALL), target)
    cache = KernelCache()
    default = graph_from_lowered(low, resolved, cache=cache)
    conv = next(n for n in default.nodes if n.op_kinds[0] == "conv2d")
    workload = workload_module(low.mod[conv.func_name])
    sch = tvm.s_tir.Schedule(workload)
    sch.parallel(sch.get_loops(sch.get_sblock("conv2d_nchw"))[0])
    db = ms.database.JSONDatabase(str(tmp_path / "w.json"), str(tmp_path / "r.json"))
    db.commit_tuning_record(ms.database.TuningRecord(
        sch.trace, db.commit_workload(workload), [1e-3], target, ms.arg_info.ArgInfo.from_prim_func(workload["main"])))
    tuned = graph_from_lowered(low, resolved, database=db, cache=cache)
    assert _same(graph_arrays(tuned), graph_arrays(graph_from_lowered(low, resolved, database=db)))
    node = next(n for n in tuned.nodes if n.name == conv.name)
    assert node.schedule_source == "database" and node.stats["parallel_loops"] == 1
