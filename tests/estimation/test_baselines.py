"""Baselines fit what they can represent (synthetic latencies, not measurements)."""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.data import Data

from tvm_cost.estimation.baselines import BoostedAggregates, LinearFlopsBytes, graph_aggregates
from tvm_cost.features.schema import NODE_STATIC, SCHEMA


def _synthetic_graph(rng: np.random.Generator) -> Data:
    n = int(rng.integers(2, 6))
    u = np.zeros((1, len(SCHEMA.globals)), np.float32)
    flops, nbytes = rng.uniform(5, 20), rng.uniform(5, 15)
    u[0, 0], u[0, 1] = flops, nbytes  # log_total_flops, log_total_bytes
    latency_ms = float(np.exp(0.5 * flops + 0.3 * nbytes - 4.0))  # a synthetic power law
    return Data(x=torch.rand(n, len(SCHEMA.node)), edge_index=torch.zeros(2, 0, dtype=torch.long),
                u=torch.from_numpy(u), latency_ms=latency_ms)


def test_linear_baseline_recovers_a_power_law():
    rng = np.random.default_rng(0)
    train = [_synthetic_graph(rng) for _ in range(40)]
    test = [_synthetic_graph(rng) for _ in range(10)]
    pred = LinearFlopsBytes().fit(train).predict(test)
    np.testing.assert_allclose(pred, [d.latency_ms for d in test], rtol=1e-3)


def test_boosted_aggregates_beats_the_mean():
    rng = np.random.default_rng(1)
    train = [_synthetic_graph(rng) for _ in range(200)]
    test = [_synthetic_graph(rng) for _ in range(40)]
    true = np.array([d.latency_ms for d in test])
    pred = BoostedAggregates(rounds=200).fit(train).predict(test)
    mean_guess = np.exp(np.mean(np.log([d.latency_ms for d in train])))
    assert np.mean(np.abs(np.log(pred / true))) < 0.5 * np.mean(np.abs(np.log(mean_guess / true)))
    assert graph_aggregates(test).shape == (40, len(SCHEMA.globals) + 3 * len(NODE_STATIC))


def test_experiment_scores_the_hierarchical_model_and_tvms_estimate():
    from tvm_cost.data.splits import random_split
    from tvm_cost.estimation.experiment import run_experiment

    rng = np.random.default_rng(2)
    items = []
    for i in range(24):
        d = _synthetic_graph(rng)
        d.edge_attr = torch.zeros(0, len(SCHEMA.edge))
        d.y = torch.tensor([[d.latency_ms, float("nan")]])
        d.node_ms = torch.full((d.num_nodes,), d.latency_ms / d.num_nodes)  # synthetic per-kernel times
        d.spec = f"synthetic{i}"
        items.append(d)
    split = random_split(len(items), val=0.2, test=0.25, seed=0)
    test_specs = [items[i].spec for i in split.test]
    results = run_experiment(items, split, epochs=1, task_sums={s: 1.0 for s in test_specs[:3]})
    assert {"linear_flops_bytes", "gbt_aggregates", "gcn", "seernet", "kernel_sum", "kernel_boost",
            "gbt_aggregates_per_work", "gcn_per_work", "seernet_per_work",
            "kernel_sum_hierarchical", "tvm_task_sum"} <= set(results)
    assert results["kernel_sum"]["n"] == len(split.test) and results["tvm_task_sum"]["n"] == 3
