"""End-to-end latency on CPU: GNNs vs baselines on held-out model families, in one run.

    python scripts/e2e_experiment.py --records tuning_logs/llvm-1core/e2e/e2e_records.jsonl \
        --test-families bert,vgg --out docs/e2e_cpu_results.json
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
    parser.add_argument("--test-families", default="bert,vgg", help="comma-separated held-out families")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--epochs", type=int, default=150)
    parser.add_argument("--out")
    args = parser.parse_args()
    logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)
    import numpy as np
    import torch

    from tvm_cost.data.e2e_dataset import load_e2e_dataset
    from tvm_cost.data.splits import group_split
    from tvm_cost.estimate.experiment import run_experiment

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    progress = {"done": 0}
    items = load_e2e_dataset(args.records, on_progress=lambda i, n: progress.update(done=i))
    t_graphs = time.perf_counter() - t0
    families = [d.family for d in items]
    test_families = args.test_families.split(",")
    per_seed = []
    for seed in (int(s) for s in args.seeds.split(",")):
        split = group_split(families, test_groups=test_families, val=0.15, seed=seed)
        per_seed.append(run_experiment(items, split, seed=seed, epochs=args.epochs))
    summary = {name: {m: float(np.mean([r[name][m] for r in per_seed])) for m in per_seed[0][name]}
               for name in per_seed[0]}
    report = {"records": args.records, "graphs": len(items), "families": dict(collections.Counter(families)),
              "test_families": test_families, "seeds": args.seeds, "graph_build_s": round(t_graphs, 1),
              "mean_over_seeds": summary, "per_seed": per_seed}
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
