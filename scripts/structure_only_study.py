"""Does the GNN need PerStoreFeature? The GNN of `tvm-cost eval` with and without its rows, on held-out families.

PerStoreFeature costs ~1.7-2.3 ms of CPU a candidate and is most of every cost model's predict; the rest of a
program graph (the stores' loops, kinds and buffers, the edges, the task's globals and the trace's decisions) comes
from the walk of the scheduled TIR and the trace, ~0.25 ms. This script trains the GNN of `tvm-cost eval` (its
default configs written out: ListMLE, per-task and plain log-MSE, 40 epochs; no ranking data) on the candidates of
the training families, per seed and variant:

- ``full``: the graphs as the shipped GNN reads them;
- ``structure``: the 164 `psf_*` node columns zeroed, which `fit_normalization` then drops (a constant column
  standardizes to 0): what a GNN that never runs the extractor would see;
- ``full-raw`` / ``structure-raw``: the same with the trace's first 40 raw decision values appended to the globals
  (what the trace ranker reads beyond the decision summary).

Each is scored on the held-out families beside XGBModel and the trace ranker, trained on the same items.
``--check-walk`` first checks that the walk alone (as the tune walks it: GPU lowering on GPU targets) gives each
record the structure of its cached graph, so the ``structure`` variant is what a tune would feed such a model.

    python scripts/structure_only_study.py --data tuning_logs/llvm-1core-xeon --variants full,structure \
        --seeds 0 --check-walk --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def with_raw_decisions(item: Any) -> Any:
    """A copy of a dataset item whose globals end with its trace's first 40 raw decision values (`raw_decisions`
    without the sketch's id, a hash a tree can split on but a network cannot read): what the trace ranker reads
    beyond the decision summary."""
    from tvm_cost.data.kernel_dataset import with_globals

    return with_globals(item, item.raw_decisions[0, 1:])


def walk_agreement(ds: Any) -> dict[str, int]:
    """Replay every record of a `KernelDataset` and compare the walk of its scheduled TIR as it is (all a
    PerStoreFeature-free featurizer would have in a tune) with the structure of its cached graph: the node features
    of our own, the edges and their features. Counts the records that agree, that differ in the number of stores,
    and that differ otherwise."""
    import tvm
    from tvm.s_tir import Schedule
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.schedule import Trace

    from tvm_cost.data.kernel_dataset import _read_raw
    from tvm_cost.features.program_graph import graph_structure, store_nodes
    from tvm_cost.features.schema import NUM_STORE_FEATURES

    raw = _read_raw(ds.root)
    counts = {"records": len(ds), "same": 0, "stores_differ": 0, "features_differ": 0}
    workloads: dict[str, tuple[Any, bool]] = {}  # per task: its workload, and whether its target is a GPU
    for d in ds:
        task = raw[d.task]
        if d.task not in workloads:
            workloads[d.task] = (ms.database.Workload.from_json([task.shash, task.workload]).mod,
                                 "gpu" in [str(k) for k in tvm.target.Target(task.target).keys])
        mod, is_gpu = workloads[d.task]
        sch = Schedule(mod)
        Trace.apply_json_to_schedule(task.records[d.record][0], sch)
        own, edge_index, edge_attr = graph_structure(store_nodes(sch.mod, is_gpu=is_gpu))
        cached = d.x.numpy()[:, NUM_STORE_FEATURES:]
        if own.shape != cached.shape:
            counts["stores_differ"] += 1
        elif np.allclose(own, cached) and np.array_equal(edge_index, d.edge_index.numpy()) and \
                np.allclose(edge_attr, d.edge_attr.numpy()):
            counts["same"] += 1
        else:
            counts["features_differ"] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--test-families", default="gpt,mlp_mixer")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--variants", default="full,structure")
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--check-walk", action="store_true",
                        help="also check that the walk alone gives each record's cached structure")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    import torch

    from tvm_cost.data.kernel_dataset import without_store_features
    from tvm_cost.tuning.offline import family_split, load_kernel_dataset, predict_log_ms, ranking_metrics, \
        study_configs, task_families, train_gnn, xgbmodel_scores
    from tvm_cost.tuning.ranker import ranker_scores

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    ds = load_kernel_dataset(args.data)
    items = [ds[i] for i in range(len(ds))]
    train_idx, test_idx = family_split(ds.groups, task_families(args.data), args.test_families.split(","))
    train_items, test_items = [items[int(i)] for i in train_idx], [items[int(i)] for i in test_idx]
    latency = np.array([d.latency_ms for d in test_items])
    group = np.array([int(d.group) for d in test_items])
    print(f"{len(train_items)} training, {len(test_items)} test candidates; loaded in {time.perf_counter() - t0:.0f} s")
    results: dict[str, Any] = {"walk_agreement": walk_agreement(ds)} if args.check_walk else {}
    if args.check_walk:
        print("walk against the cached graphs:", results["walk_agreement"], flush=True)
    results |= {
        "xgb": ranking_metrics(latency, xgbmodel_scores(train_items, test_items), group),
        "ranker-trace": ranking_metrics(latency, ranker_scores(train_items, test_items, features="trace"), group)}
    views: dict[str, Callable[[Any], Any]] = {
        "full": lambda d: d, "structure": without_store_features, "full-raw": with_raw_decisions,
        "structure-raw": lambda d: with_raw_decisions(without_store_features(d))}
    for variant in args.variants.split(","):
        view = views[variant]
        train_view, test_view = [view(d) for d in train_items], [view(d) for d in test_items]
        for seed in (int(s) for s in args.seeds.split(",")):
            model_config, train_config = study_configs(int(train_view[0].u.shape[1]), seed=seed, epochs=args.epochs)
            t1 = time.perf_counter()
            model, _ = train_gnn(train_view, model_config=model_config, train_config=train_config)
            pred = predict_log_ms(model, test_view)
            results[f"{variant}/{seed}"] = {**ranking_metrics(latency, -pred, group),
                                            "train_s": time.perf_counter() - t1}
            print(variant, seed, {k: round(v, 4) for k, v in results[f"{variant}/{seed}"].items()}, flush=True)
    for name, metrics in results.items():
        if name != "walk_agreement":
            print(f"{name:16s}", "  ".join(f"{k} {v:.3f}" for k, v in metrics.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"data": args.data, "test_families": args.test_families, "results": results,
                       "elapsed_s": time.perf_counter() - t0}, f, indent=1)


if __name__ == "__main__":
    main()
