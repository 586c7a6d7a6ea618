"""How well can any model rank the stored latencies of held-out tasks? Two ceilings, in one run.

- **noise**: ``noise.json`` re-times sampled records; the ratio stored / re-timed median is the error of a stored
  label. Dividing each test latency by a ratio drawn from those gives a plausible "re-timed" latency; a model that
  knew it exactly is scored against the stored labels (mean over `--draws`).
- **in-task**: TVM's `XGBModel` trained on half of every test task's own candidates, scored on the other half
  (seen tasks, so an optimistic bound for held-out ones at this data size); also with the training families'
  candidates added, and on the training families alone (the held-out setting), scored on the same half.

    python scripts/kernel_label_ceiling.py --data /tmp/kdata/llvm-1core --test-families gpt,mlp_mixer
"""

from __future__ import annotations

import argparse
import json


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--test-families", default="gpt,mlp_mixer")
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    import numpy as np

    from tvm_cost.tuning.offline import family_split, load_kernel_dataset, ranking_metrics, task_families, \
        xgbmodel_scores

    ds = load_kernel_dataset(args.data)
    train_idx, test_idx = family_split(ds.groups, task_families(args.data), args.test_families.split(","))
    train = [ds[int(i)] for i in train_idx]
    items = [ds[int(i)] for i in test_idx]
    latency = np.array([d.latency_ms for d in items])
    group = np.array([int(d.group) for d in items])
    noise = json.load(open(f"{args.data}/noise.json"))["records"]
    ratios = np.array([r["stored_secs"] / r["median"] for r in noise])
    rng = np.random.default_rng(args.seed)
    draws = [ranking_metrics(latency, -latency / rng.choice(ratios, size=len(latency)), group)
             for _ in range(args.draws)]
    noise_ceiling = {k: float(np.mean([d[k] for d in draws])) for k in draws[0]}

    half = np.zeros(len(items), bool)
    for g in np.unique(group):
        idx = np.flatnonzero(group == g)
        half[rng.permutation(idx)[:len(idx) // 2]] = True
    fit = [d for d, h in zip(items, half) if h]
    rest = [d for d, h in zip(items, half) if not h]

    def xgb_on(fit_items: list) -> dict[str, float]:
        return ranking_metrics(latency[~half], xgbmodel_scores(fit_items, rest), group[~half])

    print(json.dumps({"test_records": len(items), "noise_records": len(ratios),
                      "stored_over_retimed": sorted(round(float(r), 2) for r in ratios),
                      "noise_ceiling": noise_ceiling, "xgbmodel_in_task_half_split": xgb_on(fit),
                      "xgbmodel_training_families_plus_half": xgb_on(train + fit),
                      "xgbmodel_training_families_only": xgb_on(train)}, indent=1))


if __name__ == "__main__":
    main()
