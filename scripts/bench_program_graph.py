"""Time program-graph construction against `PerStoreFeature` alone on one search round of candidates.

Candidates come from MetaSchedule's own sampler: the design space of `PostOrderApply` replayed with random
decisions by `ReplayTrace` (postprocessors applied), exactly what a search round scores. Each measurement runs
`--repeats` times; the script prints every run and the medians.

    python scripts/bench_program_graph.py --workload conv2d --num 2048
    python scripts/bench_program_graph.py --workload matmul --target cuda --num 2048
"""

from __future__ import annotations

import argparse
import collections
import json
import logging
import statistics
import time
from typing import Any


def _workload(name: str) -> Any:
    import tvm
    from tvm import te

    if name == "conv2d":  # ResNet-18 stage 2: 1x64x56x56, 3x3, pad 1, + ReLU
        n, c, h, w, k, r = 1, 64, 56, 56, 64, 3
        a = te.placeholder((n, c, h, w), name="A")
        wt = te.placeholder((k, c, r, r), name="W")
        pad = te.compute((n, c, h + 2, w + 2), lambda i, j, y, x: tvm.tirx.if_then_else(
            tvm.tirx.all(y >= 1, y <= h, x >= 1, x <= w), a[i, j, y - 1, x - 1], 0.0), name="pad")
        rc, ry, rx = te.reduce_axis((0, c), "rc"), te.reduce_axis((0, r), "ry"), te.reduce_axis((0, r), "rx")
        conv = te.compute((n, k, h, w), lambda i, j, y, x: te.sum(
            pad[i, rc, y + ry, x + rx] * wt[j, rc, ry, rx], axis=[rc, ry, rx]), name="conv")
        relu = te.compute(conv.shape, lambda *i: te.max(conv(*i), 0.0), name="relu")
        return te.create_prim_func([a, wt, relu])
    if name == "matmul":  # 512^3 GEMM + bias
        a, b = te.placeholder((512, 512), name="A"), te.placeholder((512, 512), name="B")
        bias = te.placeholder((512,), name="bias")
        kk = te.reduce_axis((0, 512), "k")
        mm = te.compute((512, 512), lambda i, j: te.sum(a[i, kk] * b[kk, j], axis=kk), name="matmul")
        out = te.compute((512, 512), lambda i, j: mm[i, j] + bias[j], name="add")
        return te.create_prim_func([a, b, bias, out])
    raise ValueError(f"unknown workload {name!r}; choose conv2d or matmul")


def _context(func: Any, target: Any, rules: str) -> Any:
    """A TuneContext with a space generator and ReplayTrace, without importing tensor intrinsics (20-35 s)."""
    import tvm
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule import _ffi_api
    from tvm.s_tir.meta_schedule.logging import get_logger, get_logging_func

    space = ms.space_generator.PostOrderApply(sch_rules=rules, postprocs=rules, mutator_probs=rules)
    context = ms.TuneContext.__new__(ms.TuneContext)
    context.__init_handle_by_constructor__(
        _ffi_api.TuneContext, tvm.IRModule({"main": func}), target, space, ms.search_strategy.ReplayTrace(),
        "bench", 2, 42, get_logging_func(get_logger("bench")))
    _ffi_api.TuneContextInitialize(context)
    return context


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", default="conv2d", choices=["conv2d", "matmul"])
    parser.add_argument("--target", default="llvm", choices=["llvm", "cuda"])
    parser.add_argument("--num", type=int, default=2048, help="candidates (one search round: 2048)")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    import numpy as np
    import tvm

    from tvm_cost.features.program_graph import program_graphs, store_feature_rows, to_pyg_batch, workload_globals
    from tvm_cost.features.program_walk import store_nodes

    if args.target == "llvm":
        target, rules, spec = tvm.target.Target({"kind": "llvm", "num-cores": 2}), "llvm", "llvm"
    else:  # plain CUDA rules: the tensor-core ones need the tensor intrinsics import
        target, rules, spec = tvm.target.Target("nvidia/nvidia-h100"), "cuda", "cuda-h100"
    context = _context(_workload(args.workload), target, rules)
    start = time.perf_counter()
    context.pre_tuning(max_trials=args.num, num_trials_per_iter=args.num,
                       design_spaces=context.generate_design_space())
    candidates = context.generate_measure_candidates()
    print(f"{len(candidates)} candidates of {args.workload} on {args.target} sampled in "
          f"{time.perf_counter() - start:.1f} s")

    import torch_geometric.data  # noqa: F401  (imported before timing: ~5 s)

    u = workload_globals(context.mod, target_spec=spec)
    times: dict[str, list[float]] = collections.defaultdict(list)
    for _ in range(args.repeats):
        start = time.perf_counter()
        rows = store_feature_rows(context, candidates)
        times["per_store_feature"].append(time.perf_counter() - start)
        start = time.perf_counter()
        graphs = program_graphs(context, candidates, target_spec=spec, store_features=rows, u=u)
        times["graph_overhead"].append(time.perf_counter() - start)
        start = time.perf_counter()
        graphs = program_graphs(context, candidates, target_spec=spec)
        times["program_graphs_total"].append(time.perf_counter() - start)
        start = time.perf_counter()
        batch = to_pyg_batch(graphs)
        times["to_pyg_batch"].append(time.perf_counter() - start)
    fast = sum(len(store_nodes(c.sch.mod, is_gpu=args.target == "cuda")) == r.shape[0]
               for c, r in zip(candidates, rows))
    med = {k: statistics.median(v) for k, v in times.items()}
    for name, runs in times.items():
        print(f"{name:22s} " + "  ".join(f"{t:7.2f} s" for t in runs) + f"   median {med[name]:.2f} s "
              f"({med[name] / len(candidates) * 1e3:.2f} ms per candidate)")
    # The two end-to-end timings differ by more than the overhead on a shared machine; the overhead measured on
    # the same rows is the steadier figure.
    ratio = (med["per_store_feature"] + med["graph_overhead"]) / med["per_store_feature"]
    print(f"(PerStoreFeature + graph construction) / PerStoreFeature alone: {ratio:.3f}x "
          f"(end to end, separately timed: {med['program_graphs_total'] / med['per_store_feature']:.2f}x); "
          f"with batching: {(ratio * med['per_store_feature'] + med['to_pyg_batch']) / med['per_store_feature']:.3f}x")
    print(f"fast walk matched the rows of {fast}/{len(candidates)} candidates; batch {batch}")
    nodes = collections.Counter(g["x"].shape[0] for g in graphs)
    edges = np.mean([g["edge_index"].shape[1] for g in graphs])
    print(json.dumps({"workload": args.workload, "target": args.target, "candidates": len(candidates),
                      "nodes_histogram": dict(sorted(nodes.items())), "mean_edges": round(float(edges), 2),
                      "median_s": {k: round(v, 3) for k, v in med.items()}, "ratio": round(ratio, 3)}))


if __name__ == "__main__":
    main()
