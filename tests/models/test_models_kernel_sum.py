"""KernelSumNet: the graph output is the log of the summed node predictions; it learns per-kernel times."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from models_helpers import assert_graph_model, permute_nodes
from torch_geometric.data import Batch

from tvm_cost.models import KernelSumNet, ModelConfig, build_model, synthetic_graphs
from tvm_cost.train import TrainConfig, load_checkpoint, save_checkpoint, train
from tvm_cost.train.kernel_sum import KernelSumLoss


def synthetic_kernel_graphs(n: int, *, seed: int) -> list:
    """Synthetic graphs whose nodes carry made-up kernel times: exp of a fixed linear function of node features
    plus a neighbour term; y = their sum (the CPU e2e case). Synthetic, for tests only."""
    weights = torch.Generator().manual_seed(123)
    a = torch.randn(8, generator=weights) / 3
    graphs = synthetic_graphs(n, node_dim=8, edge_dim=3, global_dim=4, raw_scale=False, seed=seed, min_nodes=3,
                              max_nodes=10)
    for g in graphs:
        base = g.x @ a
        fan_in = torch.zeros(g.num_nodes).index_add_(0, g.edge_index[1], torch.ones(g.edge_index.shape[1]))
        g.node_ms = (base + 0.3 * fan_in).exp()
        g.y = g.node_ms.sum().reshape(1, 1)
    return graphs


def _config(**kw) -> ModelConfig:
    return ModelConfig(node_dim=8, edge_dim=3, global_dim=4, hidden=32, layers=2, dropout=0.0, **kw)


def test_graph_output_is_the_log_of_summed_nodes():
    graphs = synthetic_kernel_graphs(6, seed=0)
    model = KernelSumNet(_config()).fit_normalization(graphs).eval()
    assert_graph_model(model, graphs)
    batch = Batch.from_data_list(graphs)
    with torch.no_grad():
        node = model.node_log_ms(batch)
        sums = torch.zeros(len(graphs)).index_add_(0, batch.batch, node.exp())
        assert torch.allclose(model(batch)[:, 0], sums.log(), atol=1e-5)
        # renumbering the nodes renumbers the node predictions
        g = graphs[0]
        moved = permute_nodes(g, torch.Generator().manual_seed(1))
        perm = [int((g.x == row).all(1).nonzero()) for row in moved.x]
        assert torch.allclose(model.node_log_ms(moved), model.node_log_ms(g)[perm], atol=1e-5)


def test_only_latency_heads_and_node_labels():
    with pytest.raises(ValueError, match="latency only"):
        KernelSumNet(_config(heads=("latency", "memory")))
    with pytest.raises(ValueError, match="node_ms"):
        KernelSumNet(_config()).fit_normalization(synthetic_graphs(2, node_dim=8, edge_dim=3, global_dim=4))


def test_learns_kernel_times_better_than_a_flat_share(tmp_path):
    train_set, test_set = synthetic_kernel_graphs(160, seed=1), synthetic_kernel_graphs(40, seed=2)
    model = build_model(kind="kernel_sum", config=_config())
    train(model, train_set, None, config=TrainConfig(epochs=60, batch_size=16, lr=3e-3, patience=None),
          loss_fn=KernelSumLoss(model))
    model.eval()
    batch = Batch.from_data_list(test_set)
    with torch.no_grad():
        node_err = (model.node_log_ms(batch) - batch.node_ms.log()).abs().median()
        graph_err = (model(batch)[:, 0] - batch.y[:, 0].log()).abs().median()
    # baseline: every node gets the training set's mean node time (knows the node count, not the kernels)
    mean_node = float(torch.cat([g.node_ms for g in train_set]).log().mean())
    flat_node = (mean_node - batch.node_ms.log()).abs().median()
    counts = torch.bincount(batch.batch).float()
    flat_graph = (np.log(np.exp(mean_node)) + counts.log() - batch.y[:, 0].log()).abs().median()
    assert node_err < 0.5 * flat_node and graph_err < 0.5 * flat_graph
    path = save_checkpoint(tmp_path / "ks", model, schema={"name": "synthetic", "version": 1, "hash": "s"})
    loaded, meta = load_checkpoint(path, schema="s")
    assert meta["model_class"] == "KernelSumNet"
    with torch.no_grad():
        assert torch.equal(loaded.node_log_ms(batch), model.node_log_ms(batch))


def test_graphs_measured_end_to_end_only_train_through_the_sum():
    from tvm_cost.models.kernel_sum import without_node_times

    graphs = synthetic_kernel_graphs(6, seed=3)
    mixed = graphs[:3] + [without_node_times(g) for g in graphs[3:]]
    model = KernelSumNet(_config()).fit_normalization(mixed)
    batch = Batch.from_data_list(mixed)
    terms = KernelSumLoss(model)(model(batch), batch)
    assert all(torch.isfinite(v) for v in terms.values())
    # the node term sees only the three graphs with node times
    only = Batch.from_data_list(graphs[:3])
    assert torch.allclose(terms["node"], KernelSumLoss(model)(model(only), only)["node"])
    with pytest.raises(ValueError, match="no graph has per-node times"):
        KernelSumNet(_config()).fit_normalization([without_node_times(g) for g in graphs])
