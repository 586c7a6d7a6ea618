"""Tiny real MetaSchedule objects for the cost-model tests: one TE matmul task, sampled schedules, SYNTHETIC times.

A module of its own, not `conftest`: tests import these by name, and `from conftest import ...` finds whichever
folder's conftest pytest loaded last when several test folders run in one call.
"""

from __future__ import annotations

import tvm
from tvm import te
from tvm.s_tir import Schedule
from tvm.s_tir import meta_schedule as ms

LLVM = tvm.target.Target({"kind": "llvm", "num-cores": 2})


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
