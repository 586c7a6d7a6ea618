"""Helpers of the collection tests: tiny Relax workloads, synthetic records, process cleanup."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

LLVM = {"kind": "llvm", "num-cores": 2}
CUDA = {"kind": "cuda", "arch": "sm_90", "max_threads_per_block": 1024, "max_shared_memory_per_block": 49152,
        "thread_warp_size": 32}


def dense_module(n: int = 32) -> Any:
    """matmul + relu: one fused task."""
    from tvm.script import ir as I
    from tvm.script import relax as R

    if n == 32:
        @I.ir_module
        class Dense32:
            @R.function
            def main(x: R.Tensor((1, 32), "float32"), w: R.Tensor((32, 32), "float32")):  # type: ignore[valid-type]
                with R.dataflow():
                    z = R.nn.relu(R.matmul(x, w))
                    R.output(z)
                return z

        return Dense32

    @I.ir_module
    class Dense16:
        @R.function
        def main(x: R.Tensor((1, 16), "float32"), w: R.Tensor((16, 16), "float32")):  # type: ignore[valid-type]
            with R.dataflow():
                z = R.nn.relu(R.matmul(x, w))
                R.output(z)
            return z

    return Dense16


def conv_dense_module() -> Any:
    """conv2d + relu, then the same matmul + relu kernel as `dense_module(32)`: two tasks, one shared."""
    from tvm.script import ir as I
    from tvm.script import relax as R

    @I.ir_module
    class ConvDense:
        @R.function
        def main(x: R.Tensor((1, 2, 4, 4), "float32"), w: R.Tensor((2, 2, 3, 3), "float32"),  # type: ignore[valid-type]
                 v: R.Tensor((32, 32), "float32")):  # type: ignore[valid-type]
            with R.dataflow():
                y = R.nn.relu(R.nn.conv2d(x, w, padding=1))
                f = R.reshape(y, (1, 32))
                z = R.nn.relu(R.matmul(f, v))
                R.output(z)
            return z

    return ConvDense


def prim_func_record(run_secs: list[float] | None = None) -> tuple[list[str], list[Any]]:
    """A real (workload JSON, record JSON) pair without a TuneContext: a split of a tiny add kernel."""
    import tvm
    from tvm import te
    from tvm.s_tir import Schedule
    from tvm.s_tir import meta_schedule as ms

    a = te.placeholder((64,), "float32", name="a")
    b = te.compute((64,), lambda i: a[i] + 1.0, name="add")
    add = te.create_prim_func([a, b])
    mod = tvm.IRModule({"main": add})
    sch = Schedule(mod)
    (loop,) = sch.get_loops(sch.get_sblock("add"))
    sch.split(loop, [None, 8])
    workload = ms.database.Workload(mod)
    rec = ms.database.TuningRecord(sch.trace, workload, run_secs, tvm.target.Target(LLVM),
                                   ms.arg_info.ArgInfo.from_prim_func(add))
    return [str(x) for x in workload.as_json()], rec.as_json()


def fake_record(i: int, run_secs: list[float] | None = None) -> list[Any]:
    """A record JSON with a distinct trace (not replayable; enough for the store's bookkeeping)."""
    return [[[["Fake", [], [i], []]], []], run_secs, {"kind": "llvm"}, []]


def fake_workload(shash: str = "123") -> list[str]:
    return [shash, "AAAA"]


def read_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def count_records(root: Path) -> dict[str, int]:
    """Records per workload shash across the measured and failed databases."""
    counts: dict[str, int] = {}
    for prefix in ("database", "failures"):
        wl = [json.loads(x)[0] for x in read_lines(root / f"{prefix}_workload.json")]
        for line in read_lines(root / f"{prefix}_tuning_record.json"):
            shash = wl[json.loads(line)[0]]
            counts[shash] = counts.get(shash, 0) + 1
    return counts


def kill_tree(pid: int) -> None:
    """SIGKILL a process and every descendant, by process id."""
    import psutil

    try:
        proc = psutil.Process(pid)
        procs = [*proc.children(recursive=True), proc]
    except psutil.NoSuchProcess:
        return
    for p in procs:
        try:
            os.kill(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    psutil.wait_procs(procs, timeout=10)
