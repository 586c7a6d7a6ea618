"""How do the GNN and XGBModel improve with more training tasks? Held-out metrics at fractions of the training tasks.

Test tasks are those only the held-out families contain (as `tvm-cost eval`); each fraction trains on a random
subset of the other tasks (whole tasks, `--draws` subsets below 100 %), GNN and XGBModel on the same subset, with
`tvm-cost eval`'s default settings (per unit of work, sum readout, 40 epochs).

    python scripts/kernel_data_scaling.py --data /tmp/kdata/epyc-clean --json scaling.json
"""

from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--test-families", default="gpt,mlp_mixer")
    parser.add_argument("--fractions", default="0.25,0.5,1.0")
    parser.add_argument("--draws", type=int, default=2, help="task subsets per fraction below 1 (GNN seed = draw)")
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--json", required=True, help="rows written after each training, so a stop loses none")
    args = parser.parse_args()
    import numpy as np
    import torch

    from tvm_cost.cli_kernel import _configs
    from tvm_cost.tuning.offline import RANKING_METRICS, compare_on_held_out, family_split, load_kernel_dataset, \
        task_families

    torch.set_num_threads(1)
    defaults = _eval_defaults()
    defaults.epochs = args.epochs
    model_config, train_config = _configs(defaults)
    ds = load_kernel_dataset(args.data)
    items = [ds[i] for i in range(len(ds))]
    train_idx, test_idx = family_split(ds.groups, task_families(args.data), args.test_families.split(","))
    tasks = sorted({ds.groups[int(i)] for i in train_idx})
    rows = []
    for fraction in (float(f) for f in args.fractions.split(",")):
        for draw in range(1 if fraction >= 1 else args.draws):
            keep = set(np.random.default_rng(100 + draw).choice(tasks, size=max(1, round(fraction * len(tasks))),
                                                                 replace=False).tolist())
            subset = np.array([i for i in train_idx if ds.groups[int(i)] in keep])
            t0 = time.perf_counter()
            result = compare_on_held_out(items, subset, test_idx, seeds=[draw], model_config=model_config,
                                         train_config=train_config)
            rows.append({"fraction": fraction, "draw": draw, "train_candidates": len(subset),
                         "train_tasks": len(keep), "test_candidates": len(test_idx),
                         **{name: {k: result["mean"][name][k] for k in RANKING_METRICS} for name in ("xgb", "gnn")},
                         "seconds": round(time.perf_counter() - t0, 1)})
            print(json.dumps(rows[-1]), flush=True)
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)


def _eval_defaults() -> argparse.Namespace:
    """The training arguments `tvm-cost eval` uses when none are given."""
    from tvm_cost.cli import build_parser

    return build_parser().parse_args(["eval", "DATA"])


if __name__ == "__main__":
    main()
