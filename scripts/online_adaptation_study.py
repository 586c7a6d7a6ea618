"""How fast does each cost model learn a held-out task from that task's own measurements? An offline replay of a
tune's later rounds, on measured candidates, to explain why the GNN leads early in `tvm-cost bench kernel` and
falls behind XGBModel by 128 trials.

For every test task (one that only the held-out families contain) with at least ``k + round`` measured
candidates, `--splits` random orders: the first ``k`` candidates are "measured" (fed in rounds of `--round`, 16 as
the bench measures them), the rest are ranked. Scored on the rest, in one run:

- ``gnn``: the pretrained checkpoint alone (what the search sees before any update);
- ``gnn-online``: the checkpoint fine-tuned after each round by `finetune_steps` with `GNNCostModel`'s shipped
  settings (what ``update()`` does in a tune);
- ``gnn-adapt`` and ``gnn-top``: the same with the bench's stronger fine-tunings (`tvm_cost.tuning.bench.ADAPT`,
  `TOP`); ``gnn-8x5e-4`` and ``gnn-4x1e-3``: 8 steps at lr 5e-4 (the default until run twenty-seven, when 2
  steps at 2e-3 replaced it) and 4 steps at 1e-3;
- ``xgb``: TVM's `XGBModel` fitted on the ``k`` measured candidates only (as in a tune);
- ``ensemble``: `EnsembleCostModel`'s rank mean of ``gnn-online`` and ``xgb``;
- with ``--ranker OUT`` (boosters trained without the test families): ``ranker`` and ``ranker-trace``, the
  pretrained boosters alone, and ``ranker-online`` and ``ranker-trace-online``, each refitted on the ``k`` measured
  as `RankerCostModel.update` does in a tune (`REFIT_ROUNDS` more trees on the base);
- ``random``.

Each model is also scored among the fastest quarter of each task's rest (``--fast-share``): the good candidates
among which a search late in a tune must choose.

    python scripts/online_adaptation_study.py --data tuning_logs/llvm-1core-xeon \\
        --checkpoint docs/bench_kernel_xeon/xeon-no-mbv2-r50 --test-families mobilenet_v2,resnet50
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np


def ranker_online_scores(rankers: dict[str, Any], seen: list[Any], rest: list[Any], *, seed: int
                         ) -> dict[str, np.ndarray]:
    """Scores of `rest` by each pretrained booster (name "ranker" or "ranker-trace") alone and refitted on `seen`
    ("...-online"), as `RankerCostModel` refits in a tune: `REFIT_ROUNDS` trees added to the base."""
    import xgboost as xgb

    from tvm_cost.tuning.ranker import ranker_features, train_booster
    from tvm_cost.tuning.ranker_model import REFIT_ROUNDS

    out = {}
    latency = np.array([d.latency_ms for d in seen])
    for features, base in rankers.items():
        name = "ranker" if features == "rows" else "ranker-trace"
        test = xgb.DMatrix(ranker_features(rest, features))
        refit = train_booster(ranker_features(seen, features), latency, np.zeros(len(seen), np.int64), seed=seed,
                              rounds=REFIT_ROUNDS, base=base, nthread=1)
        out[name], out[f"{name}-online"] = base.predict(test), refit.predict(test)
    return out


def split_means(runs: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Each model's metrics averaged over the splits. A metric no split defines is left out: peak@5 among the
    fastest quarter, whose groups have 5 candidates or fewer."""
    means: dict[str, dict[str, float]] = {}
    for name, metrics in runs[0].items():
        values = {m: np.array([run[name][m] for run in runs], dtype=float) for m in metrics}
        means[name] = {m: float(np.nanmean(v)) for m, v in values.items() if np.isfinite(v).any()}
    return means


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--checkpoint", required=True, help="a GNN trained without the test families")
    parser.add_argument("--test-families", required=True)
    parser.add_argument("--measured", default="16,32,64", help="comma-separated k: candidates measured first")
    parser.add_argument("--round", type=int, default=16, help="candidates measured per tune round")
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--ranker", help="rows booster OUT trained without the test families (OUT-trace beside it)")
    parser.add_argument("--fast-share", type=float, default=0.25,
                        help="also score among this share of each task's rest, the fastest")
    parser.add_argument("--variants", default="gnn-adapt,gnn-top,gnn-8x5e-4,gnn-4x1e-3",
                        help="comma-separated fine-tunings replayed beside the default ('' for none)")
    parser.add_argument("--json", help="write the report here")
    args = parser.parse_args()
    import torch
    from rich.progress import track

    from tvm_cost.features.program_schema import CANDIDATE_SCHEMA
    from tvm_cost.train import load_checkpoint
    from tvm_cost.tuning.bench import ADAPT, TOP
    from tvm_cost.tuning.config import GNNCostModelConfig
    from tvm_cost.tuning.offline import (
        family_split,
        load_kernel_dataset,
        online_comparison_scores,
        ranking_metrics,
        task_families,
    )

    torch.set_num_threads(1)
    pretrained, meta = load_checkpoint(args.checkpoint, schema=CANDIDATE_SCHEMA)
    held = args.test_families.split(",")
    if not set(held) <= set(meta["extra"].get("excluded_families", [])):
        parser.error(f"the checkpoint was trained on some of {held}: {meta['extra'].get('excluded_families')}")
    ds = load_kernel_dataset(args.data)
    _, test_idx = family_split(ds.groups, task_families(args.data), held)
    by_task: dict[int, list[Any]] = {}
    for item in (ds[int(i)] for i in test_idx):
        by_task.setdefault(int(item.group), []).append(item)
    rankers = {}
    if args.ranker:
        from tvm_cost.tuning.ranker import load_ranker
        from tvm_cost.tuning.ranker_model import trace_checkpoint

        for features, path in (("rows", args.ranker), ("trace", trace_checkpoint(args.ranker))):
            assert path is not None  # args.ranker is a path here, and so is its trace booster
            booster, info = load_ranker(path, features)
            if not set(held) <= set(info["extra"].get("excluded_families", [])):
                parser.error(f"the ranker {path} was trained on some of {held}")
            rankers[features] = booster
    shipped = GNNCostModelConfig()
    known = {"gnn-adapt": shipped.replace(**ADAPT), "gnn-top": shipped.replace(**TOP),
             "gnn-8x5e-4": shipped.replace(update_steps=8, lr=5e-4),
             "gnn-4x1e-3": shipped.replace(update_steps=4, lr=1e-3)}
    chosen = [v for v in args.variants.split(",") if v]
    if unknown := set(chosen) - set(known):
        parser.error(f"unknown variants {sorted(unknown)}; choices: {', '.join(known)}")
    variants = {name: known[name] for name in chosen}
    report: dict[str, Any] = {"data": args.data, "checkpoint": args.checkpoint, "test_families": held,
                              "splits": args.splits, "round": args.round, "results": {}}
    for k in [int(v) for v in args.measured.split(",")]:
        tasks = {g: items for g, items in by_task.items() if len(items) >= k + args.round}
        if not tasks:
            print(f"k={k}: no test task has {k + args.round} or more candidates")
            continue
        per_split: list[dict[str, dict[str, float]]] = []
        per_split_fast: list[dict[str, dict[str, float]]] = []
        for split in track(range(args.splits), description=f"k={k}: {len(tasks)} tasks"):
            rng = np.random.default_rng(split)
            scores: dict[str, list[np.ndarray]] = {}
            latency, group, fast = [], [], []
            for g, items in tasks.items():
                order = rng.permutation(len(items))
                seen, rest = [items[i] for i in order[:k]], [items[i] for i in order[k:]]
                for name, s in online_comparison_scores(pretrained, seen, rest, shipped, variants, seed=split,
                                                        round_size=args.round, rng=rng).items():
                    scores.setdefault(name, []).append(s)
                for name, s in ranker_online_scores(rankers, seen, rest, seed=split).items():
                    scores.setdefault(name, []).append(s)
                latency.append([d.latency_ms for d in rest])
                fast.append(latency[-1] <= np.quantile(latency[-1], args.fast_share))
                group.append(np.full(len(rest), g))
            lat, grp = np.concatenate(latency), np.concatenate(group)
            per_split.append({n: ranking_metrics(lat, np.concatenate(s), grp) for n, s in scores.items()})
            top = np.concatenate(fast)
            per_split_fast.append({n: ranking_metrics(lat[top], np.concatenate(s)[top], grp[top])
                                   for n, s in scores.items()})
        mean, mean_fast = split_means(per_split), split_means(per_split_fast)
        report["results"][str(k)] = {"tasks": len(tasks), "mean": mean, "fast_share": args.fast_share,
                                     "mean_among_fast": mean_fast}
        print(f"k={k} measured, {len(tasks)} tasks, mean over {args.splits} splits (pairwise / peak@1 / peak@5; "
              f"then pairwise / peak@1 among the fastest {args.fast_share:.0%} of each task's rest):")
        for n, m in mean.items():
            row = [m.get(metric, np.nan) for metric in ("pairwise_acc", "peak@1", "peak@5")]
            row_fast = [mean_fast[n].get(metric, np.nan) for metric in ("pairwise_acc", "peak@1")]
            print(f"  {n:<19} {' / '.join(f'{v:.3f}' for v in row)}    {' / '.join(f'{v:.3f}' for v in row_fast)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
