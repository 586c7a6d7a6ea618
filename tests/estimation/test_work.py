"""Work (FLOPs + bytes) and latency per unit of work; SYNTHETIC graphs and latencies, not measurements."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from tvm_cost.estimation.baselines import BoostedAggregates
from tvm_cost.estimation.work import graph_work, node_log_work, per_work
from tvm_cost.features.schema import SCHEMA


def _graph(rng: np.random.Generator, flops: float, nbytes: float) -> Data:
    """A SYNTHETIC graph whose latency is 1e-6 ms per unit of work times a factor of its first global."""
    u = np.zeros((1, len(SCHEMA.globals)), np.float32)
    u[0, SCHEMA.globals.index("log_total_flops")] = np.log1p(flops)
    u[0, SCHEMA.globals.index("log_total_bytes")] = np.log1p(nbytes)
    u[0, SCHEMA.globals.index("num_nodes")] = rng.uniform(1, 3)
    x = np.zeros((2, len(SCHEMA.node)), np.float32)
    x[:, SCHEMA.node.index("log_flops")] = np.log1p([flops / 4, 3 * flops / 4])
    x[:, SCHEMA.node.index("log_bytes")] = np.log1p([nbytes / 2, nbytes / 2])
    latency = 1e-6 * (flops + nbytes) * float(u[0, SCHEMA.globals.index("num_nodes")])
    return Data(x=torch.from_numpy(x), u=torch.from_numpy(u), y=torch.tensor([[latency, 7.0]]), latency_ms=latency)


def test_work_is_flops_plus_bytes_of_the_graph_and_of_each_node():
    d = _graph(np.random.default_rng(0), 4e6, 2e5)
    assert graph_work([d])[0] == pytest.approx(4.2e6, rel=1e-5)
    np.testing.assert_allclose(np.exp(node_log_work(d)), [1e6 + 1e5 + 2, 3e6 + 1e5 + 2], rtol=1e-5)


def test_per_work_divides_the_latency_label_only_and_leaves_the_item_alone():
    d = _graph(np.random.default_rng(1), 1e6, 1e6)
    (c,) = per_work([d])
    assert float(c.y[0, 0]) == pytest.approx(d.latency_ms / 2e6, rel=1e-5) and float(c.y[0, 1]) == 7.0
    assert float(d.y[0, 0]) == pytest.approx(d.latency_ms)


def test_trees_on_latency_per_work_follow_graphs_larger_than_any_seen():
    rng = np.random.default_rng(2)
    train = [_graph(rng, rng.uniform(1e5, 1e7), rng.uniform(1e4, 1e6)) for _ in range(150)]
    larger = [_graph(rng, rng.uniform(1e9, 1e10), rng.uniform(1e8, 1e9)) for _ in range(20)]
    true = np.array([d.latency_ms for d in larger])

    def mape(model: BoostedAggregates) -> float:
        return float(np.mean(np.abs(model.fit(train).predict(larger) / true - 1)))

    assert mape(BoostedAggregates(rounds=200, per_work=True)) < 0.1 < 0.9 < mape(BoostedAggregates(rounds=200))
