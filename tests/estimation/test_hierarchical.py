"""The overhead-form hierarchical GNN learns the run's time outside its kernels (SYNTHETIC times)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from tvm_cost.estimation.hierarchical import overhead_labels, train_overhead_gnn
from tvm_cost.estimation.kernel_boost import KernelBoost
from tvm_cost.estimation.work import node_log_work
from tvm_cost.features.schema import SCHEMA


def _graph(rng: np.random.Generator) -> Data:
    """A chain whose SYNTHETIC kernels take 1 ms per FLOP + byte and whose run takes (1 + u0 / 2) times
    their sum: an overhead only the global input shows, which per-kernel times never contain."""
    n = int(rng.integers(3, 9))
    x = rng.uniform(0, 1, (n, len(SCHEMA.node))).astype(np.float32)
    x[:, SCHEMA.node.index("log_flops")] = np.log1p(rng.uniform(10, 1000, n))
    x[:, SCHEMA.node.index("log_bytes")] = np.log1p(rng.uniform(1, 100, n))
    u = torch.from_numpy(rng.uniform(0, 1, (1, len(SCHEMA.globals))).astype(np.float32))
    node_ms = torch.from_numpy(np.exp(node_log_work(Data(x=torch.from_numpy(x)))))
    e2e = float(node_ms.sum()) * (1 + 0.5 * float(u[0, 0]))
    return Data(x=torch.from_numpy(x), u=u, edge_index=torch.stack([torch.arange(n - 1), torch.arange(1, n)]),
                edge_attr=torch.zeros(n - 1, len(SCHEMA.edge)), node_ms=node_ms, y=torch.tensor([[e2e]]),
                latency_ms=e2e)


def test_overhead_labels_are_the_run_over_its_kernels_and_skip_untimed_graphs():
    rng = np.random.default_rng(0)
    graphs = [_graph(rng) for _ in range(3)]
    graphs[1].node_ms[0] = float("nan")  # measured end to end only
    labels = overhead_labels(graphs)
    assert len(labels) == 2
    for item, source in zip(labels, (graphs[0], graphs[2]), strict=True):
        assert float(item.y[0, 0]) == pytest.approx(source.latency_ms / float(source.node_ms.sum()), rel=1e-5)
    assert float(graphs[0].y[0, 0]) == pytest.approx(graphs[0].latency_ms)  # the inputs are not changed


def test_overhead_gnn_beats_the_summed_kernel_trees_when_the_run_has_overhead():
    rng = np.random.default_rng(1)
    train, val, test = ([_graph(rng) for _ in range(k)] for k in (80, 16, 24))
    true = np.array([d.latency_ms for d in test])
    trees_only = KernelBoost(seed=0, rounds=40).fit(train + val).predict(test)
    model = train_overhead_gnn(train, val, seed=0, epochs=60, rounds=40)
    pred = model.predict(test)
    mape_trees = np.mean(np.abs(trees_only - true) / true)
    assert mape_trees > 0.1  # the kernels alone miss the overhead
    assert np.mean(np.abs(pred - true) / true) < 0.5 * mape_trees
    assert model.overhead(test).shape == (len(test),)
