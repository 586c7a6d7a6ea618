"""The schedule that will run for each kernel, and MetaSchedule's per-store features of it.

Without a tuning database the schedule is the one TVM's default pipeline applies for the target: none on `llvm`
(the CPU pipeline compiles the legalized loops as they are), DLight's default rules on CUDA. With a database, the
best record for the workload wins, exactly as `MetaScheduleApplyDatabase` would pick it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tvm
import tvm_ffi
from tvm import tirx
from tvm.s_tir import meta_schedule as ms

log = logging.getLogger(__name__)


@dataclass
class ScheduledKernel:
    """A kernel as it will run: its scheduled PrimFunc, where the schedule came from, and its features."""

    func: tirx.PrimFunc
    source: str  # "default", "database" or "default-fallback"
    store_features: np.ndarray  # float32[S, 164]


@dataclass
class KernelCache:
    """A per-process memo of per-kernel work, so a kernel shared by many models is scheduled and featurized once.

    Keys hold a structural hash of the TIR the value was computed from and the target string: the workload for
    TVM's default schedule, the record's scheduled module for a database schedule (so a database that gains records
    cannot serve a stale entry). Structurally equal TIR differs at most in names, which no feature reads. Pass one
    cache to many `relay_passes.build.graph_from_lowered` calls; it only grows, so drop it between unrelated jobs.
    """

    entries: dict[tuple[str, ...], Any] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0

    def memo(self, key: tuple[str, ...], compute: Callable[[], Any]) -> Any:
        """The cached value of `key`, computed (and stored) on first use."""
        if key in self.entries:
            self.hits += 1
            return self.entries[key]
        self.misses += 1
        value = self.entries[key] = compute()
        return value


def workload_module(func: tirx.PrimFunc) -> tvm.IRModule:
    """The module MetaSchedule keys a task by (its workload): the PrimFunc alone, named `main`."""
    return tvm.IRModule({"main": func.with_attr("global_symbol", "main")})


def _dlight_rules(*, matmul: bool = True) -> list[Any]:
    """The rules of `relax.backend.cuda.pipeline.legalize_passes`, optionally without the Matmul rule."""
    from tvm.s_tir import dlight as dl

    rules = [dl.gpu.GEMV(), dl.gpu.Reduction(), dl.gpu.GeneralReduction(), dl.gpu.Fallback()]
    return [dl.gpu.Matmul(), *rules] if matmul else rules


def _default_schedules(mod: tvm.IRModule, target: tvm.target.Target) -> tuple[tvm.IRModule, set[str]]:
    """TVM's default schedules for `target`, and the names of kernels that needed the fallback.

    DLight's Matmul rule raises ("The block no longer exists") on some convolutions fused with a long chain of
    adds and multiplies (41 of NAS-Bench-201's 15,625 as-run networks on CUDA), so TVM's own CUDA build fails
    there. Those kernels get the remaining rules, and their nodes say ``schedule_source="default-fallback"``.
    """
    if target.kind.name != "cuda":
        return mod, set()
    from tvm.s_tir import dlight as dl

    with target:
        try:
            return dl.ApplyDefaultSchedule(*_dlight_rules())(mod), set()
        except (ValueError, RuntimeError):
            pass
        funcs: dict[str, Any] = {}
        fallback: set[str] = set()
        for gv, func in mod.functions.items():
            one = tvm.IRModule({gv.name_hint: func})
            try:
                funcs[gv.name_hint] = dl.ApplyDefaultSchedule(*_dlight_rules())(one)[gv.name_hint]
            except (ValueError, RuntimeError) as err:
                log.warning("DLight's Matmul rule failed on %s (%s); scheduled without it", gv.name_hint,
                            str(err).strip().splitlines()[-1])
                funcs[gv.name_hint] = dl.ApplyDefaultSchedule(*_dlight_rules(matmul=False))(one)[gv.name_hint]
                fallback.add(gv.name_hint)
    return tvm.IRModule(funcs), fallback


def schedule_kernels(
    mod: tvm.IRModule,
    names: list[str],
    target: tvm.target.Target,
    database: ms.Database | None = None,
    *,
    cache: KernelCache | None = None,
) -> dict[str, ScheduledKernel]:
    """Schedule each PrimFunc `names` of the lowered `mod` and extract its PerStoreFeature matrix.

    Args:
        mod: The lowered module (`relay_passes.lower`).
        names: PrimFunc names to schedule.
        target: The compilation target.
        database: A MetaSchedule database whose best record, when one matches the workload, gives the schedule.
        cache: Reuse kernels scheduled before (see `KernelCache`); None computes every kernel.
    """
    records: dict[str, tvm.IRModule] = {}
    if database is not None:
        for name in names:
            sch = database.query_schedule(workload_module(mod[name]), target, workload_name="main")
            if sch is not None:
                records[name] = sch.mod
    keys = {name: kernel_key(records[name] if name in records else workload_module(mod[name]),
                             "database" if name in records else "default", target) for name in names}
    found = {name: cache.entries[keys[name]] for name in names if cache is not None and keys[name] in cache.entries}
    todo = [name for name in names if name not in found]
    defaults, fallback = _default_schedules(tvm.IRModule({n: mod[n] for n in todo if n not in records}), target)
    schedules = {name: (records[name], "database") if name in records else (workload_module(defaults[name]),
                 "default-fallback" if name in fallback else "default") for name in todo}
    feats = _per_store_features([m for m, _ in schedules.values()], target)
    made = {name: ScheduledKernel(m["main"], src, f) for (name, (m, src)), f in zip(schedules.items(), feats)}
    if cache is not None:
        cache.hits += len(found)
        cache.misses += len(made)
        cache.entries.update({keys[name]: kernel for name, kernel in made.items()})
    return {name: found[name] if name in found else made[name] for name in names}


def kernel_key(module: tvm.IRModule, source: str, target: tvm.target.Target) -> tuple[str, str, str]:
    """`KernelCache` key of a kernel: where its schedule comes from, the structural hash of `module`, the target."""
    return (source, str(tvm_ffi.structural_hash(module)), str(target))


def feature_context(mod: tvm.IRModule, target: tvm.target.Target, *, num_threads: int = 1) -> ms.TuneContext:
    """A TuneContext for feature extraction only (`num_threads`: the extractor's threads).

    `ms.TuneContext.__init__` imports `tvm.s_tir.tensor_intrin` first, which costs 20-35 s on this machine and is
    only needed by schedule rules that tensorize; the extractor never uses them, so call the FFI constructor
    directly with no space generator and no search strategy.
    """
    from tvm.s_tir.meta_schedule import _ffi_api
    from tvm.s_tir.meta_schedule.logging import get_logger, get_logging_func

    context = ms.TuneContext.__new__(ms.TuneContext)
    context.__init_handle_by_constructor__(
        _ffi_api.TuneContext, mod, target, None, None, "tvm-cost-features", num_threads, -1,
        get_logging_func(get_logger(__name__)))
    return context


def _per_store_features(mods: list[tvm.IRModule], target: tvm.target.Target) -> list[np.ndarray]:
    """One PerStoreFeature call for all kernels: the extractor only reads the target from the context."""
    if not mods:
        return []
    from tvm.s_tir import Schedule

    from tvm_cost.features.program_graph import store_feature_rows

    context = feature_context(mods[0], target)
    candidates = [ms.MeasureCandidate(Schedule(m), ms.arg_info.ArgInfo.from_prim_func(m["main"])) for m in mods]
    return store_feature_rows(context, candidates)
