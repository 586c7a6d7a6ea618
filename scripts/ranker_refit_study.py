"""How many boosting rounds should `RankerCostModel.update` add to the pretrained ranker? One run.

A tune measures a task's candidates in order; the question is whether refitting the pretrained booster on the
first `k` measured candidates of an unseen task ranks that task's later ones better. This replays the records of
the held-out families in the order they were measured: the booster of `tvm_cost.tuning.ranker` is trained on the
other families, then for each test task with at least 48 records it is refit on the first `k` (``rounds``
boosting rounds on top, as `RankerCostModel` does), or a fresh booster is fit on them alone, and every variant
ranks the task's remaining records. Mean pairwise accuracy over the tasks.

    python scripts/ranker_refit_study.py --data tuning_logs/llvm-1core-xeon --json docs/ranker_refit_study_xeon.json
"""

from __future__ import annotations

import argparse
import json

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="tuning-log folder with tasks.json")
    parser.add_argument("--test-families", default="gpt,mlp_mixer")
    parser.add_argument("--measured", default="16,32", help="comma-separated k: candidates measured before refitting")
    parser.add_argument("--rounds", default="10,25,50,100", help="comma-separated refit rounds to compare")
    parser.add_argument("--min-records", type=int, default=48)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()

    import xgboost as xgb

    from tvm_cost.train import pairwise_accuracy
    from tvm_cost.tuning.offline import family_split, load_kernel_dataset, task_families
    from tvm_cost.tuning.ranker import ranker_features, train_booster

    ds = load_kernel_dataset(args.data)
    train_idx, test_idx = family_split(ds.groups, task_families(args.data), args.test_families.split(","))[:2]
    train = [ds[int(i)] for i in train_idx]
    base = train_booster(ranker_features(train), np.array([d.latency_ms for d in train]),
                         np.array([int(d.group) for d in train]), seed=0)
    tasks: dict[int, list] = {}
    for i in test_idx:
        tasks.setdefault(int(ds[int(i)].group), []).append(ds[int(i)])
    tasks = {g: sorted(v, key=lambda d: d.record) for g, v in tasks.items() if len(v) >= args.min_records}
    rounds = [int(r) for r in args.rounds.split(",")]
    results: dict[str, dict[str, float]] = {}
    for k in (int(v) for v in args.measured.split(",")):
        acc: dict[str, list[float]] = {}
        for items in tasks.values():
            features, latency = ranker_features(items), np.array([d.latency_ms for d in items])
            fit, rest = np.zeros(k), xgb.DMatrix(features[k:])
            variants = {"pretrained": base}
            variants.update({f"refit{r}": train_booster(features[:k], latency[:k], fit, rounds=r, base=base)
                             for r in rounds})
            variants["fresh"] = train_booster(features[:k], latency[:k], fit, rounds=max(rounds))
            for name, booster in variants.items():
                acc.setdefault(name, []).append(pairwise_accuracy(latency[k:], booster.predict(rest)))
        results[str(k)] = {name: round(float(np.mean(v)), 4) for name, v in acc.items()}
        print(f"first {k} measured of {len(tasks)} test tasks:", results[str(k)], flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"data": args.data, "test_families": args.test_families, "tasks": len(tasks),
                       "training_candidates": len(train), "pairwise_on_later_records": results}, f, indent=1)


if __name__ == "__main__":
    main()
