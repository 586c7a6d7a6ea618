"""The cheapest end-to-end test: each model fits a tiny synthetic dataset."""

import pytest
import torch
from torch_geometric.data import Batch

from tvm_cost.models import ModelConfig, build_model, synthetic_graphs
from tvm_cost.models.seeding import isolated_rng
from tvm_cost.train.losses import log_mse_loss


@pytest.mark.parametrize("kind, readout, steps, limit", [("seernet", "pool", 150, 0.02),
                                                          ("seernet", "sum", 150, 0.02), ("gcn", "pool", 150, 0.1)])
def test_overfit_tiny_dataset(kind, readout, steps, limit):
    graphs = synthetic_graphs(16, heads=("latency", "memory"), seed=7)
    cfg = ModelConfig(node_dim=8, edge_dim=3, global_dim=4, hidden=32, layers=2, dropout=0.0,
                      heads=("latency", "memory"), readout=readout)
    model = build_model(kind=kind, config=cfg).fit_normalization(graphs).train()
    batch = Batch.from_data_list(graphs)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    with isolated_rng(0):
        first = float(log_mse_loss(model(batch), batch.y).detach())
        for _ in range(steps):
            opt.zero_grad()
            loss = log_mse_loss(model(batch), batch.y)
            loss.backward()
            opt.step()
    assert float(loss.detach()) < limit < first
