"""Per-cell cost of NAS-Bench-201 operator graphs: the frontend-equal path against the fast path.

    nice -n 10 python scripts/bench_nb201_graphs.py --cells 20 --warm 100 --batch 32 --target cuda-2080ti

"plain": `nb201_to_relax` as the frontend emits it, TVM's FoldBatchnormToConv2D, `lower`, `graph_from_lowered`
without a cache.
"fast": batch norm emitted folded, and a `KernelCache` and a `LegalizeCache` warmed on `--warm` other cells first
(as in a long run); `--as-run` builds every edge (as HELP ran the networks).
Both give the same arrays (checked here on every cell). Prints medians and means in seconds.
"""

from __future__ import annotations

import argparse
import json
import logging
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--help-dir", default="../shared/data/help")
    parser.add_argument("--cells", type=int, default=20, help="timed cells")
    parser.add_argument("--warm", type=int, default=100, help="cells that warm the kernel cache first")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--target", default="cuda-2080ti")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--as-run", action="store_true", help="every cell edge computed, none as x*0")
    args = parser.parse_args()
    logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)
    import numpy as np
    import torch
    from tvm import relax

    from relay_passes.build import graph_from_lowered
    from relay_passes.legalize_cache import LegalizeCache
    from relay_passes.lower import lower
    from relay_passes.schedule import KernelCache
    from tvm_cost.data.external.help import load_help_archs
    from tvm_cost.data.external.nasbench201 import live_edges, parse_nb201
    from tvm_cost.data.external.nasbench201_relax import nb201_to_relax
    from tvm_cost.features.arrays import graph_arrays
    from tvm_cost.targets import resolve_target

    torch.set_num_threads(1)
    resolved = resolve_target(args.target)
    archs = [a for a in load_help_archs(args.help_dir, space="nasbench201").values() if live_edges(parse_nb201(a))]
    order = np.random.default_rng(args.seed).permutation(len(archs))
    warm, timed = order[: args.warm], order[args.warm: args.warm + args.cells]
    cache, legalize_cache = KernelCache(), LegalizeCache()
    for i in warm:
        graph_from_lowered(lower(nb201_to_relax(archs[i], batch=args.batch, fold_batch_norm=True, as_run=args.as_run),
                                 resolved.tvm_target(), legalize_cache=legalize_cache),
                           resolved, batch_size=args.batch, cache=cache)
    steps: dict[str, list[list[float]]] = {"plain": [], "fast": []}
    for i in timed:
        arrays = {}
        for path in ("plain", "fast"):
            t0 = time.perf_counter()
            mod = nb201_to_relax(archs[i], batch=args.batch, fold_batch_norm=path == "fast", as_run=args.as_run)
            t1 = time.perf_counter()
            if path == "plain":
                mod = relax.transform.FoldBatchnormToConv2D()(mod)
            lowered = lower(mod, resolved.tvm_target(), legalize_cache=legalize_cache if path == "fast" else None)
            t2 = time.perf_counter()
            graph = graph_from_lowered(lowered, resolved, batch_size=args.batch,
                                       cache=cache if path == "fast" else None)
            arrays[path] = graph_arrays(graph)
            t3 = time.perf_counter()
            steps[path].append([t1 - t0, t2 - t1, t3 - t2, t3 - t0])
        if not all(np.array_equal(arrays["plain"][k], arrays["fast"][k]) for k in arrays["plain"]):
            raise SystemExit(f"error: the fast path changed the graph of {archs[i]!r}")
    report = {"target": args.target, "batch": args.batch, "as_run": args.as_run, "cells": len(timed),
              "warm_cells": len(warm),
              "columns": ["relax", "lower (plain: with TVM's batch-norm fold)", "features", "total"]}
    for path, rows in steps.items():
        t = np.array(rows)
        report[path] = {"median_s": np.median(t, 0).round(3).tolist(), "mean_s": t.mean(0).round(3).tolist()}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
