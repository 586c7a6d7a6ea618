"""The end-to-end comparison: GNNs and baselines trained on the same split, scored on held-out data in one run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tvm_cost.data.splits import Split
from tvm_cost.estimation.baselines import BoostedAggregates, LinearFlopsBytes
from tvm_cost.estimation.graph_models import latency_only, predict_latency_ms, train_graph_model
from tvm_cost.estimation.hierarchical import train_hierarchical, train_overhead_gnn
from tvm_cost.estimation.kernel_boost import KernelBoost
from tvm_cost.estimation.work import graph_work, per_work
from tvm_cost.train.metrics import mape, share_within, spearman


def score_predictions(true_ms: np.ndarray, pred_ms: np.ndarray) -> dict[str, float]:
    """MAPE, share within +-10% and Spearman of predicted against measured latencies, and the count."""
    return {"mape": float(mape(true_ms, pred_ms)), "within_10pct": float(share_within(true_ms, pred_ms)),
            "spearman": float(spearman(true_ms, pred_ms)), "n": int(len(true_ms))}


def train_kernel_sum_model(train: Sequence[Any], val: Sequence[Any], *, seed: int, epochs: int) -> Any:
    """The hierarchical GNN: `KernelSumNet` (hidden 64, 3 layers) on per-kernel and end-to-end times."""
    from tvm_cost.features.schema import SCHEMA
    from tvm_cost.models import ModelConfig
    from tvm_cost.train import TrainConfig
    from tvm_cost.train.kernel_sum import train_kernel_sum

    return train_kernel_sum(latency_only(train), latency_only(val) or None,
                            config=ModelConfig.for_schema(SCHEMA, hidden=64, layers=3, dropout=0.1, seed=seed),
                            train_config=TrainConfig(epochs=epochs, batch_size=16, lr=2e-3, patience=40, seed=seed))


def run_experiment(items: Sequence[Any], split: Split, *, seed: int = 0, epochs: int = 150,
                   heads: tuple[str, ...] = ("latency", "memory"),
                   task_sums: dict[str, float] | None = None) -> dict[str, dict[str, float]]:
    """Train every model on `split.train` (GNNs early-stop on `split.val`), score all on `split.test`.

    The ``*_per_work`` rows learn latency per unit of work (`tvm_cost.estimation.work`) and multiply back.
    Items with `node_ms` (per-kernel times; NaN where only the end-to-end time is known) also train the
    hierarchical `KernelSumNet` ("kernel_sum"), the per-kernel trees `KernelBoost` ("kernel_boost", on the
    nodes of train + val) and the two hierarchical GNNs fed the trees' predictions
    (`tvm_cost.estimation.hierarchical`): per-kernel corrections ("kernel_sum_hierarchical") and the run's overhead
    over its kernels ("overhead_hierarchical"). `task_sums` (spec -> TVM's sum-of-tasks estimate in ms,
    `tvm_cost.estimation.task_sum`) adds that baseline, scored on the test items it covers.

    Returns:
        model name -> {"mape", "within_10pct", "spearman", "n"} on the test set.
    """
    train = [items[i] for i in split.train]
    val = [items[i] for i in split.val]
    test = [items[i] for i in split.test]
    true = np.array([d.latency_ms for d in test])
    results: dict[str, dict[str, float]] = {}
    results["linear_flops_bytes"] = score_predictions(true, LinearFlopsBytes().fit(train).predict(test))
    results["gbt_aggregates"] = score_predictions(true, BoostedAggregates(seed).fit(train + val).predict(test))
    results["gbt_aggregates_per_work"] = score_predictions(
        true, BoostedAggregates(seed, per_work=True).fit(train + val).predict(test))
    for kind in ("gcn", "seernet"):
        model = train_graph_model(kind, train, val, seed=seed, epochs=epochs, heads=heads)
        results[kind] = score_predictions(true, predict_latency_ms(model, test))
        model = train_graph_model(kind, per_work(train), per_work(val), seed=seed, epochs=epochs, heads=heads)
        results[f"{kind}_per_work"] = score_predictions(true, predict_latency_ms(model, test) * graph_work(test))
    if all(hasattr(d, "node_ms") for d in items):
        model = train_kernel_sum_model(train, val, seed=seed, epochs=epochs)
        results["kernel_sum"] = score_predictions(true, predict_latency_ms(model, test))
        results["kernel_boost"] = score_predictions(true, KernelBoost(seed=seed).fit(train + val).predict(test))
        model, augment = train_hierarchical(latency_only(train), latency_only(val), seed=seed, epochs=epochs)
        results["kernel_sum_hierarchical"] = score_predictions(true, predict_latency_ms(model, augment(test)))
        overhead = train_overhead_gnn(latency_only(train), latency_only(val), seed=seed, epochs=epochs)
        results["overhead_hierarchical"] = score_predictions(true, overhead.predict(test))
    if task_sums:
        covered = [i for i, d in enumerate(test) if d.spec in task_sums]
        results["tvm_task_sum"] = score_predictions(true[covered],
                                                    np.array([task_sums[test[i].spec] for i in covered]))
    return results
