"""The operator-graph pass: a lowered Relax module -> an `OperatorGraph` with static and schedule features."""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import relax
from tvm.s_tir import meta_schedule as ms

from relay_passes.graph import OperatorGraph, OpNode, TensorEdge
from relay_passes.lower import FusionLevel, LoweredModule, lower
from relay_passes.schedule import KernelCache, schedule_kernels, workload_module
from relay_passes.tir_stats import tir_stats
from tvm_cost.errors import TvmCostError


# Loop and block counts describe the schedule that runs; FLOPs and bytes describe the workload.
_SCHEDULE_STATS = ("blocks", "loops", "max_loop_depth", "parallel_loops", "vectorized_loops", "unrolled_loops",
                   "thread_loops")


def _tensor_infos(ty: Any) -> list[tuple[list[int], str]]:
    """(shape, dtype) of each tensor in a Relax type, flattening tuples."""
    if isinstance(ty, relax.TensorType):
        shape = [int(d.value) if hasattr(d, "value") else -1 for d in ty.shape.values] if ty.shape else []
        return [(shape, str(ty.dtype))]
    if isinstance(ty, relax.TupleType):
        return [t for field in ty.fields for t in _tensor_infos(field)]
    return []


def _call_tir_op() -> tvm.ir.Op:
    return tvm.ir.Op.get("relax.call_tir")


def build_operator_graph(
    mod: tvm.IRModule,
    target: Any,
    *,
    fusion: FusionLevel = "default",
    database: ms.Database | None = None,
    source: str = "",
    batch_size: int = 1,
    cache: KernelCache | None = None,
) -> OperatorGraph:
    """Lower `mod` with TVM's passes and describe each kernel it will compile.

    Args:
        mod: A Relax module with static shapes (see `tvm_cost.importer.import_model`).
        target: A preset name, target JSON or `ResolvedTarget` (see `tvm_cost.targets.resolve_target`).
        fusion: "default" for TVM's fused kernels, "none" for one node per op.
        database: Tuning database; its best records replace the default schedules.
        source: Model origin, kept in the graph for messages.
        batch_size: The model's batch size, a global feature.
        cache: Per-kernel results to reuse across calls (`relay_passes.schedule.KernelCache`).
    """
    from tvm_cost.targets import resolve_target

    resolved = resolve_target(target)
    lowered = lower(mod, resolved.tvm_target(), fusion=fusion)
    return graph_from_lowered(lowered, resolved, fusion=fusion, database=database, source=source,
                              batch_size=batch_size, cache=cache)


def graph_from_lowered(
    lowered: LoweredModule,
    resolved: Any,
    *,
    fusion: FusionLevel = "default",
    database: ms.Database | None = None,
    source: str = "",
    batch_size: int = 1,
    cache: KernelCache | None = None,
) -> OperatorGraph:
    """The feature-extraction half of `build_operator_graph`, for a module `relay_passes.lower` already lowered.

    With a `cache`, kernels seen before (same workload, target and schedule source) skip scheduling,
    PerStoreFeature and the TIR counts; the graph is the same as without it.
    """
    from tvm_cost.features.schema import SCHEMA

    tvm_target = resolved.tvm_target()
    graph = _walk_main(lowered.mod, lowered.op_kinds, source)
    if not graph.nodes:
        raise TvmCostError("empty graph: the model computes nothing TVM would compile", path=source or None)

    names = sorted({n.func_name for n in graph.nodes})
    hashes = {name: str(tvm_ffi.structural_hash(workload_module(lowered.mod[name]))) for name in names}
    tasks = {str(tvm_ffi.structural_hash(t.dispatched[0])): t.task_name
             for t in ms.relax_integration.extract_tasks(lowered.mod, tvm_target)}
    kernels = schedule_kernels(lowered.mod, names, tvm_target, database, cache=cache)
    stats = {}
    for name in names:
        def kernel_stats(name: str = name) -> dict[str, float]:
            workload = tir_stats(lowered.mod[name]).as_dict()
            scheduled = tir_stats(kernels[name].func).as_dict() if kernels[name].source == "database" \
                or tvm_target.kind.name == "cuda" else workload
            return {**workload, **{k: scheduled[k] for k in _SCHEDULE_STATS}}

        # A database schedule is keyed by its record in `schedule_kernels`; its counts are cheap to redo.
        if cache is not None and kernels[name].source != "database":
            stats[name] = cache.memo(("tir_stats", hashes[name], str(tvm_target)), kernel_stats)
        else:
            stats[name] = kernel_stats()
    for node in graph.nodes:
        node.workload_hash = hashes[node.func_name]
        node.task_name = tasks.get(node.workload_hash, node.func_name)
        node.stats = dict(stats[node.func_name])
        node.schedule_source = kernels[node.func_name].source
        node.store_features = kernels[node.func_name].store_features
    graph.target = dict(resolved.target_json)
    graph.fusion = fusion
    graph.schema_version = SCHEMA.version
    graph.globals = _globals(graph, resolved, batch_size)
    return graph


def _walk_main(mod: tvm.IRModule, op_kinds: dict[str, list[str]], source: str) -> OperatorGraph:
    """Nodes are the `call_tir` bindings of `main`; edges follow the variables (through tuples) between them."""
    call_tir = _call_tir_op()
    producers: dict[Any, list[tuple[int | None, list[int], str]]] = {}
    for param in mod["main"].params:
        producers[param] = [(None, s, d) for s, d in _tensor_infos(param.ty)]
    nodes: list[OpNode] = []
    edges: list[TensorEdge] = []
    seen_names: set[str] = set()

    def inputs_of(expr: Any) -> list[tuple[int | None, list[int], str]]:
        if isinstance(expr, relax.Var):
            return producers.get(expr, [])
        if isinstance(expr, relax.Tuple):
            return [p for f in expr.fields for p in inputs_of(f)]
        if isinstance(expr, relax.TupleGetItem):
            items = inputs_of(expr.tuple_value)
            return [items[expr.index]] if expr.index < len(items) else []
        return []

    body = mod["main"].body
    for block in body.blocks:
        for binding in block.bindings:
            var, value = binding.var, binding.value
            if isinstance(value, relax.Call) and value.op.same_as(call_tir):
                func_name = value.args[0].name_hint
                outputs = _tensor_infos(var.ty)
                idx = len(nodes)
                name = var.name if var.name not in seen_names else f"{var.name}_{idx}"
                seen_names.add(name)
                shape, dtype = outputs[0] if outputs else ([], "float32")
                nodes.append(OpNode(name, func_name, func_name, "", op_kinds.get(func_name, [func_name]),
                                    shape, dtype, {}))
                for src, in_shape, in_dtype in inputs_of(value.args[1]):
                    if src is not None:
                        edges.append(TensorEdge(src, idx, in_shape, in_dtype))
                producers[var] = [(idx, s, d) for s, d in outputs]
            elif isinstance(value, (relax.Var, relax.Tuple, relax.TupleGetItem)):
                producers[var] = inputs_of(value)
            elif isinstance(value, relax.Call):
                op = getattr(value.op, "name", None) or getattr(value.op, "name_hint", type(value.op).__name__)
                raise TvmCostError(f"unsupported op {op!r}: TVM did not lower it to a TIR kernel",
                                   path=source or None)
            # constants, shapes and other values compute nothing
    return OperatorGraph(nodes, edges, {}, {}, "", "", source)


def _globals(graph: OperatorGraph, resolved: Any, batch_size: int) -> dict[str, Any]:
    hw = resolved.hardware
    return {
        "total_flops": sum(n.flops for n in graph.nodes),
        "total_bytes": sum(n.bytes for n in graph.nodes),
        "num_nodes": len(graph.nodes),
        "num_edges": len(graph.edges),
        "num_tasks": len({n.workload_hash for n in graph.nodes}),
        "batch_size": batch_size,
        "target_name": resolved.name,
        "target_kind": hw.kind,
        "hw_name": hw.name,
        "hw_cores": hw.cores,
        "hw_peak_gflops": hw.peak_gflops,
        "hw_mem_bandwidth_gbs": hw.mem_bandwidth_gbs,
        "hw_l1_kb": hw.l1_kb,
        "hw_l2_kb": hw.l2_kb,
        "hw_l3_kb": hw.l3_kb,
        "hw_clock_mhz": hw.clock_mhz,
    }
