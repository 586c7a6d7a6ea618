"""`GCNBaseline`: the BRP-NAS latency predictor (GCN + global mean pooling + MLP), as a baseline for `SeerNet`."""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch_geometric.nn import GCNConv, global_mean_pool
from torch_geometric.utils import to_undirected

from tvm_cost.models.base import GraphCostModel
from tvm_cost.models.config import ModelConfig
from tvm_cost.models.layers import mlp
from tvm_cost.models.seeding import isolated_rng


class GCNBaseline(GraphCostModel):
    """Plain GCN predictor after BRP-NAS (Dudziak et al. 2020, https://arxiv.org/abs/2007.08668).

    `config.layers` GCN layers (Kipf & Welling 2017) with ReLU and dropout over node features only, global mean
    pooling, then one MLP head per metric. Edges are used in both directions (GCN's symmetric normalization);
    edge features are ignored. The standardized globals `u` are concatenated to the pooled embedding so the
    baseline sees the same inputs (hardware, batch size) as `SeerNet`; with ``global_dim == 0`` it is the plain
    BRP-NAS design.

    Args:
        config: The architecture; weights are initialized from `config.seed` (global RNG untouched).

    Shapes:
        forward(data): `Data`/`Batch` with x [N, node_dim], edge_index [2, E], u [G, global_dim], batch [N]
        -> [G, len(config.heads)] natural-log metrics.
    """

    def __init__(self, config: ModelConfig) -> None:
        if config.readout != "pool":
            raise ValueError(f"GCNBaseline pools its nodes; readout={config.readout!r} is SeerNet's")
        super().__init__(config)
        c = config
        with isolated_rng(c.seed):
            dims = [c.node_dim] + [c.hidden] * max(c.layers, 1)
            self.convs = nn.ModuleList(GCNConv(dims[i], dims[i + 1]) for i in range(max(c.layers, 1)))
            self.dropout = nn.Dropout(c.dropout)
            self.heads = nn.ModuleDict({name: mlp(c.hidden + c.global_dim, c.hidden, 1, layers=c.mlp_layers,
                                                  dropout=c.dropout) for name in c.heads})

    def _heads_standardized(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor, u: Tensor, batch: Tensor,
                            num_graphs: int) -> Tensor:
        edge_index = to_undirected(edge_index, num_nodes=x.shape[0])
        h = x
        for conv in self.convs:
            h = self.dropout(torch.relu(conv(h, edge_index)))
        z = torch.cat([global_mean_pool(h, batch, size=num_graphs), u], dim=-1)
        return torch.cat([head(z) for head in self.heads.values()], dim=-1)
