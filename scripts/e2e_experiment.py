"""End-to-end latency on CPU: GNNs and baselines on held-out model families, in one run.

    python scripts/e2e_experiment.py --records tuning_logs/llvm-1core/e2e/e2e_kernels.jsonl \
        --extra-records tuning_logs/llvm-1core/e2e/e2e_records.jsonl --test-families bert,vgg \
        --task-times tuning_logs/llvm-1core/e2e/task_times.jsonl --out docs/e2e_cpu_results.json

`--records` may hold per-kernel times (``measure-e2e --per-kernel``); configurations only in `--extra-records`
join with end-to-end labels alone. `--task-times` times every task of the test configurations alone (cached
there) for TVM's sum-of-tasks estimate.
"""

from __future__ import annotations

import argparse
import collections
import json
import logging
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", required=True)
    parser.add_argument("--extra-records", help="more e2e records; a configuration in --records wins")
    parser.add_argument("--test-families", default="bert,vgg", help="comma-separated held-out families")
    parser.add_argument("--task-times", help="JSON-lines store of per-task times (TVM's estimate baseline)")
    parser.add_argument("--target", default='{"kind": "llvm", "num-cores": 1}',
                        help="target the records were measured on (for --task-times)")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--epochs", type=int, default=150)
    parser.add_argument("--out")
    args = parser.parse_args()
    logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)
    import numpy as np
    import torch

    from tvm_cost.data.e2e_dataset import load_merged_e2e_dataset
    from tvm_cost.data.splits import group_split
    from tvm_cost.estimation.experiment import run_experiment

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    items = load_merged_e2e_dataset(args.records, args.extra_records)
    t_graphs = time.perf_counter() - t0
    families = [d.family for d in items]
    test_families = args.test_families.split(",")
    task_sums = _task_sums([d.spec for d in items if d.family in test_families], args.task_times, args.target) \
        if args.task_times else None
    per_seed = []
    for seed in (int(s) for s in args.seeds.split(",")):
        split = group_split(families, test_groups=test_families, val=0.15, seed=seed)
        per_seed.append(run_experiment(items, split, seed=seed, epochs=args.epochs, task_sums=task_sums))
    summary = {name: {m: float(np.mean([r[name][m] for r in per_seed])) for m in per_seed[0][name]}
               for name in per_seed[0]}
    report = {"records": args.records, "extra_records": args.extra_records, "graphs": len(items),
              "with_kernel_times": sum(bool(d.node_ms.isfinite().any()) for d in items if hasattr(d, "node_ms")),
              "families": dict(collections.Counter(families)), "test_families": test_families,
              "seeds": args.seeds, "graph_build_s": round(t_graphs, 1), "mean_over_seeds": summary,
              "per_seed": per_seed}
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")


def _task_sums(specs: list[str], store: str, target: str) -> dict[str, float]:
    """TVM's sum-of-tasks estimate for each test configuration, timing tasks not yet in `store`."""
    from rich.progress import track

    from tvm_cost.estimation.task_sum import task_sum_ms, task_times
    from tvm_cost.importer import import_model
    from tvm_cost.targets import resolve_target

    resolved = resolve_target(target)
    return {spec: task_sum_ms(task_times(import_model(spec).mod, resolved, store))
            for spec in track(specs, description="timing tasks alone")}


if __name__ == "__main__":
    main()
