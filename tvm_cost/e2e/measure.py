"""Compile a model the way TVM ships it and time it end to end with the Relax VM's time evaluator.

The module compiled is the one `relay_passes.lower` describes before fusion (canonical order, batch norm folded,
ops decomposed for inference); `tvm.compile` then runs TVM's default pipeline for the target, whose legalize and
fuse passes make the very kernels of the operator graph. With a tuning database, MetaSchedule's `compile_relax`
applies the database's best schedules instead of the defaults.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from tvm_cost.errors import TvmCostError


@dataclass
class E2EResult:
    """One end-to-end measurement.

    Attributes:
        latency_ms: Median over `repeats_ms`.
        repeats_ms: Each repeat's mean time per run, in ms.
        compile_s: Seconds `tvm.compile` took.
        planned_memory_bytes: Memory TVM's static planner allocates for the model's tensors (weights excluded),
            from `relax.analysis.estimate_memory_usage`; None where it cannot tell.
        kernels_ms: ``[kernel name, median ms]`` for each kernel call of one inference, in call order (the
            operator graph's node order); None unless asked for.
    """

    latency_ms: float
    repeats_ms: list[float]
    compile_s: float
    planned_memory_bytes: int | None = None
    kernels_ms: list[list[Any]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def prepare_for_build(mod: Any, target: Any) -> Any:
    """The pre-fusion module whose default compilation gives the operator graph's kernels."""
    import tvm
    from tvm import relax

    from relay_passes.canonicalize import canonical_order

    with target, tvm.transform.PassContext(opt_level=3):
        return tvm.transform.Sequential([
            relax.transform.FoldBatchnormToConv2D(), relax.transform.FoldConstant(),
            relax.transform.DecomposeOpsForInference(), relax.transform.CanonicalizeBindings(),
        ])(canonical_order(mod))


def planned_memory_bytes(prepared: Any, target: Any) -> int | None:
    """Bytes of the tensors TVM's static memory planner allocates for one inference (weights excluded).

    Runs the target's pipeline up to `StaticPlanBlockMemory`, where `relax.analysis.estimate_memory_usage` reads
    the plan; None where the estimate cannot be read.
    """
    import re

    import tvm
    from tvm import relax

    pipe, rt = relax.pipeline, relax.transform
    # the dataflow-lowering passes of the backends' pipelines, spelled out: TVM 0.27's
    # `relax.pipeline.dataflow_lower_passes` fails for llvm (cpu_generic does not export it)
    lower_dataflow = [rt.RewriteDataflowReshape(), rt.ToNonDataflow(), rt.RemovePurityChecking(), rt.CallTIRRewrite()]
    try:
        with target:
            planned = tvm.transform.Sequential(
                pipe.library_dispatch_passes(target) + pipe.legalize_passes(target) + lower_dataflow
                + [rt.StaticPlanBlockMemory()])(prepared)
    except Exception:  # an estimate only: never fail a measurement over it
        return None
    text = str(relax.analysis.estimate_memory_usage(planned))
    m = re.search(r"With memory planning, there are \d+ constant-size memory allocation\(s\) with total size "
                  r"([\d.e+-]+) GB", text)
    return int(float(m.group(1)) * 1e9) if m else None


def compile_model(mod: Any, target: Any, database: Any = None) -> tuple[Any, float, int | None]:
    """Compile `mod` for `target` (a `tvm.target.Target`); returns (executable, seconds, planned memory)."""
    import tvm
    from tvm.s_tir import meta_schedule as ms

    prepared = prepare_for_build(mod, target)
    t0 = time.perf_counter()
    try:
        if database is None:
            # `tvm.compile`'s "default" Relax pipeline does not fuse on CPUs; the target's own pipeline (the one
            # `relax.get_default_pipeline` returns) does, and makes the operator graph's kernels.
            with target:
                lowered = tvm.relax.get_default_pipeline(target)(prepared)
            executable = tvm.compile(lowered, target=target, relax_pipeline=None)
        else:
            executable = ms.relax_integration.compile_relax(database, prepared, target, params=None)
    except Exception as err:
        raise TvmCostError(f"TVM failed to compile the model: {str(err).strip().splitlines()[-1][:300]}") from None
    seconds = time.perf_counter() - t0
    return executable, seconds, planned_memory_bytes(prepared, target)


def time_kernels(vm: Any, args: Sequence[Any], runs: int) -> list[list[Any]]:
    """Per-call wall time of every compiled kernel in `runs` instrumented inferences; median per call, in ms.

    A VM instrument stamps the clock before and after each call; VM builtins (allocation, shape checks) are left
    out. The timer's own overhead is a few microseconds a call, small beside a kernel but not beside a reshape.
    """
    per_run: list[list[tuple[str, float]]] = []
    started: dict[str, float] = {}

    def instrument(_func: Any, symbol: str, before: bool, _ret: Any, *_args: Any) -> int:
        if "." in symbol:  # vm.builtin.* and other runtime helpers
            return 0
        if before:
            started[symbol] = time.perf_counter()
        else:
            per_run[-1].append((symbol, time.perf_counter() - started.pop(symbol)))
        return 0

    vm.set_instrument(instrument)
    try:
        for _ in range(runs):
            per_run.append([])
            vm["main"](*args)
    finally:
        vm.set_instrument(lambda *_: 0)
    names = [name for name, _ in per_run[0]]
    if any([name for name, _ in run] != names for run in per_run):
        raise TvmCostError("kernel calls differ between two runs of the same model")
    return [[name, statistics.median(run[i][1] for run in per_run) * 1e3] for i, name in enumerate(names)]


def measure_e2e(
    mod: Any,
    target: Any,
    example_inputs: tuple[Any, ...],
    *,
    database: Any = None,
    repeat: int = 5,
    min_repeat_ms: int = 100,
    seed: int = 0,
    kernel_runs: int = 0,
) -> E2EResult:
    """Compile and time `mod` on the local CPU (llvm targets).

    Args:
        mod: A static Relax module.
        target: A `tvm.target.Target` of kind llvm.
        example_inputs: Tensors giving input shapes and dtypes; random values of those are fed.
        database: Optional MetaSchedule database of tuned schedules.
        repeat: Repeats of the time evaluator; the median is reported.
        min_repeat_ms: Each repeat runs the model until at least this long, then averages.
        seed: Seed for the random input values.
        kernel_runs: If positive, also time each kernel call over this many instrumented runs (`time_kernels`).
    """
    import tvm
    from tvm import relax

    if target.kind.name != "llvm":
        raise TvmCostError(f"end-to-end timing runs on this machine's CPU; target kind {target.kind.name!r} "
                           "needs its device (see scripts/gpu_collect.sh)")
    executable, compile_s, memory = compile_model(mod, target, database)
    dev = tvm.cpu()
    vm = relax.VirtualMachine(executable, dev)
    rng = np.random.default_rng(seed)
    args = []
    for t in example_inputs:
        arr = t.numpy() if hasattr(t, "numpy") else np.asarray(t)
        if np.issubdtype(arr.dtype, np.integer):  # token ids: stay below the largest id of the example
            values = rng.integers(0, max(int(arr.max()) + 1, 2), size=arr.shape).astype(arr.dtype)
        else:
            values = rng.standard_normal(arr.shape).astype(arr.dtype)
        args.append(tvm.runtime.tensor(values, dev))
    vm["main"](*args)  # warm-up, and a failure here is a compile-side bug, not a latency
    evaluator = vm.time_evaluator("main", dev, number=1, repeat=repeat, min_repeat_ms=min_repeat_ms)
    repeats_ms = [float(r) * 1e3 for r in evaluator(*args).results]
    kernels = time_kernels(vm, args, kernel_runs) if kernel_runs > 0 else None
    return E2EResult(statistics.median(repeats_ms), repeats_ms, compile_s, memory, kernels)
