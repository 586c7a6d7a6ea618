"""Benchmark: operator-graph construction for a zoo model, with import, TVM lowering and feature extraction timed
separately (best of --repeat runs each). Not a test: run it and read the numbers.

    python scripts/bench_graph.py --model zoo:resnet50,batch=1 --target llvm --repeat 3
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="zoo:resnet50,batch=1")
    parser.add_argument("--target", default="llvm")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)

    t0 = time.perf_counter()
    import tvm  # noqa: F401  (timed apart: importing tvm and torch is a fixed cost of any TVM tool)

    from relay_passes.build import graph_from_lowered
    from relay_passes.lower import lower
    from tvm_cost.importer import import_model
    from tvm_cost.targets import resolve_target

    import_libs = time.perf_counter() - t0
    resolved = resolve_target(args.target)
    best = {"import_model": float("inf"), "tvm_lowering": float("inf"), "features": float("inf")}
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        imported = import_model(args.model)
        t1 = time.perf_counter()
        lowered = lower(imported.mod, resolved.tvm_target())
        t2 = time.perf_counter()
        graph = graph_from_lowered(lowered, resolved, source=imported.source, batch_size=imported.batch_size)
        t3 = time.perf_counter()
        for key, value in zip(best, (t1 - t0, t2 - t1, t3 - t2)):
            best[key] = min(best[key], value)
    report = {
        "model": args.model, "target": resolved.name, "nodes": len(graph.nodes), "edges": len(graph.edges),
        "seconds": {"import_tvm_and_torch": round(import_libs, 2), **{k: round(v, 3) for k, v in best.items()}},
        "beyond_tvm_lowering_s": round(best["features"], 3),
        "cpu": resolved.hardware.name if resolved.hardware.kind == "cpu" else platform.processor(),
        "repeat": args.repeat,
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
