"""Offline kernel cost-model comparison on tasks of held-out model families: GNN vs XGBoost (TVM's XGBModel
formulation: per-store features summed per candidate, label = best latency in the task / latency, squared error)
vs random, in one run.

    python scripts/kernel_offline_eval.py --data tuning_logs/llvm-1core --test-families gpt,mlp_mixer
"""

from __future__ import annotations

import argparse
import json
import logging
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--test-families", default="gpt,mlp_mixer")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out")
    args = parser.parse_args()
    logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)
    import numpy as np
    import torch
    import xgboost as xgb

    from tvm_cost.data.kernel_dataset import KernelDataset
    from tvm_cost.features.program_schema import PROGRAM_SCHEMA
    from tvm_cost.models import ModelConfig, build_model
    from tvm_cost.train import TrainConfig, kendall_tau, mape, pairwise_accuracy, peak_at_k, train

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    ds = KernelDataset(args.data, target_spec={"kind": "llvm", "num-cores": 1})
    tasks_json = json.load(open(f"{args.data}/tasks.json"))
    test_fams = set(args.test_families.split(","))
    items = [ds[i] for i in range(len(ds))]
    fam_of = {h: {m.split(",")[0].removeprefix("zoo:") for m in t["models"]} for h, t in tasks_json.items()}
    is_test = np.array([bool(fam_of.get(d.task)) and fam_of[d.task] <= test_fams for d in items])
    train_items = [d for d, t in zip(items, is_test) if not t]
    test_items = [d for d, t in zip(items, is_test) if t]
    build_s = time.perf_counter() - t0
    lat = np.array([d.latency_ms for d in test_items])
    group = np.array([int(d.group) for d in test_items])

    def metrics(score: np.ndarray) -> dict[str, float]:
        return {"pairwise_acc": pairwise_accuracy(lat, score, group), "peak@1": peak_at_k(lat, score, group, k=1),
                "peak@5": peak_at_k(lat, score, group, k=5), "kendall_tau": kendall_tau(-lat, score, group)}

    results = {"random": metrics(np.random.default_rng(args.seed).random(len(test_items)))}

    def summed(ds_items):  # XGBModel's view: the 164 per-store features summed over stores
        return np.stack([d.x[:, :164].numpy().sum(0) for d in ds_items])

    def norm_throughput(ds_items):
        lat_ = np.array([d.latency_ms for d in ds_items])
        grp = np.array([int(d.group) for d in ds_items])
        best = {g: lat_[grp == g].min() for g in set(grp)}
        return np.array([best[g] / v for g, v in zip(grp, lat_)])

    label = norm_throughput(train_items)
    booster = xgb.train({"max_depth": 10, "eta": 0.2, "min_child_weight": 0, "gamma": 0.0001, "nthread": 1,
                         "objective": "reg:squarederror", "seed": args.seed},
                        xgb.DMatrix(summed(train_items), label=label, weight=label), num_boost_round=300)
    results["xgb"] = metrics(booster.predict(xgb.DMatrix(summed(test_items))))

    config = ModelConfig.for_schema(PROGRAM_SCHEMA, hidden=64, layers=3, heads=("latency",), seed=args.seed)
    model = build_model(kind="seernet", config=config)
    t1 = time.perf_counter()
    train(model, train_items, None, config=TrainConfig(epochs=args.epochs, batch_size=64, lr=2e-3,
                                                       rank_weight=1.0, batching="group", seed=args.seed))
    train_s = time.perf_counter() - t1
    model.eval()
    from torch_geometric.loader import DataLoader

    with torch.no_grad():
        pred_log = torch.cat([model(b)[:, 0] for b in DataLoader(test_items, batch_size=256)]).numpy()
    results["gnn"] = {**metrics(-pred_log), "mape": mape(lat, np.exp(pred_log))}
    report = {"data": args.data, "records": len(items), "train_records": len(train_items),
              "test_records": len(test_items), "test_tasks": int(len(set(group))),
              "train_tasks": int(len({int(d.group) for d in train_items})), "test_families": sorted(test_fams),
              "dataset_build_s": round(build_s, 1), "gnn_train_s": round(train_s, 1), "results": results}
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
