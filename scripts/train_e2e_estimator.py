"""Train the end-to-end estimator `tvm-cost estimate` ships for a target: per-kernel trees (`KernelBoost`, the
default) or a `KernelSumNet` ensemble, on every measured configuration with per-kernel times.

    python scripts/train_e2e_estimator.py --records tuning_logs/llvm-1core-xeon/e2e/e2e_kernels.jsonl \
        --out tvm_cost/checkpoints/e2e/llvm-1core

10% of the configurations (seeded) are held back and scored (a random split; the held-out-family accuracy of the
same recipe is what scripts/e2e_experiment.py reports, docs/e2e.md), then the trees are refit on all of them.
The checkpoint records the target and the CPU the labels were measured on (`measured_on`); `tvm-cost estimate`
warns when it runs on another CPU, since its estimates are that machine's latencies.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", required=True, help="e2e records with per-kernel times")
    parser.add_argument("--extra-records", help="more e2e records (end-to-end labels only; KernelSumNet only)")
    parser.add_argument("--out", required=True, help="checkpoint path (without suffix)")
    parser.add_argument("--kind", choices=("kernel_boost", "kernel_sum"), default="kernel_boost")
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--hidden", type=int, default=48, help="KernelSumNet width")
    parser.add_argument("--epochs", type=int, default=150, help="KernelSumNet epochs")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    import numpy as np
    import torch

    from tvm_cost.data.e2e_dataset import load_merged_e2e_dataset
    from tvm_cost.data.splits import random_split
    from tvm_cost.estimation.graph_models import latency_only
    from tvm_cost.features.schema import SCHEMA

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    items = latency_only(load_merged_e2e_dataset(args.records, args.extra_records))
    split = random_split(len(items), val=0.1, test=0.0, seed=args.seed)
    train, val = [items[i] for i in split.train], [items[i] for i in split.val]
    true = np.array([d.latency_ms for d in val])
    sources = [p for p in (args.records, args.extra_records) if p]
    extra = {**_measured_on(sources), "kind": args.kind, "members": args.members,
             "records": {p: hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in sources},
             "configurations": len(items),
             "with_kernel_times": int(sum(bool(d.node_ms.isfinite().any()) for d in items)),
             "command": " ".join(sys.argv)}
    if args.kind == "kernel_boost":
        from tvm_cost.estimation.kernel_boost import KernelBoost

        pred = KernelBoost(seed=args.seed, members=args.members).fit(train).predict(val)
        extra["val_mape_random_split"] = float(np.mean(np.abs(pred - true) / true))
        model = KernelBoost(seed=args.seed, members=args.members).fit(items)
        path = model.save(args.out, schema=SCHEMA, extra=extra)
    else:
        from tvm_cost.models import ModelConfig
        from tvm_cost.train import TrainConfig, save_checkpoint
        from tvm_cost.train.kernel_sum import train_kernel_sum

        config = ModelConfig.for_schema(SCHEMA, hidden=args.hidden, layers=3, dropout=0.1, seed=args.seed)
        train_config = TrainConfig(epochs=args.epochs, batch_size=16, lr=2e-3, patience=40, seed=args.seed)
        net = train_kernel_sum(train, val, config=config, train_config=train_config, members=args.members)
        with torch.no_grad():
            pred = np.array([float(net(d)[0, 0].exp()) for d in val])
        extra.update(train_config=train_config.to_dict(), val_mape_random_split=float(np.mean(np.abs(pred - true)
                                                                                              / true)))
        path = save_checkpoint(args.out, net, schema=SCHEMA, extra=extra)
    print(json.dumps({**extra, "checkpoint": str(path), "seconds": round(time.perf_counter() - t0, 1)}, indent=1))


def _measured_on(paths: list[str]) -> dict:
    """The target name and CPU of the records (one of each, or exit: an estimator is for one machine)."""
    names, cpus = set(), set()
    for path in paths:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            names.add(rec["target_name"])
            cpus.add(rec["hardware"])
    if len(names) != 1 or len(cpus) != 1:
        sys.exit(f"error: records span targets {sorted(names)} and CPUs {sorted(cpus)}; train one per machine")
    return {"target": names.pop(), "measured_on": cpus.pop()}


if __name__ == "__main__":
    main()
