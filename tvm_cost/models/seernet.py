"""`SeerNet`: PerfSeer's graph-network cost model over operator graphs (or scheduled-kernel graphs)."""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch_geometric.nn.aggr import MultiAggregation

from tvm_cost.models.base import GraphCostModel
from tvm_cost.models.config import ModelConfig
from tvm_cost.models.layers import SeerBlock, graph_log_sum, mlp
from tvm_cost.models.seeding import isolated_rng


class SeerNet(GraphCostModel):
    """A SeerNet-style predictor of log-metrics from a graph with node, edge and global features.

    After PerfSeer (Zhao et al. 2025, https://arxiv.org/abs/2502.01206): MLP encoders for node, edge and global
    inputs; `config.layers` `SeerBlock` rounds updating edges, nodes and a global node with max+mean aggregation,
    residuals and LayerNorm; a readout concatenating mean- and max-pooled nodes with the global node (PerfSeer's
    "global-node perspective boost"); one MLP head per metric. Train several heads together with
    `tvm_cost.train.PCGrad` (PerfSeer's SeerNet-Multi). With ``config.readout == "sum"`` each head instead
    predicts every node's share of the metric from the node and the global node, and the shares are summed
    (in linear space): a kernel's time is the sum of its stores' times, TVM XGBModel's own assumption.

    Args:
        config: The architecture; weights are initialized from `config.seed` (global RNG untouched).

    Shapes:
        forward(data): `Data`/`Batch` with x [N, node_dim], edge_index [2, E], edge_attr [E, edge_dim],
        u [G, global_dim], batch [N] -> [G, len(config.heads)] natural-log metrics.
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        c = config
        with isolated_rng(c.seed):
            self.node_encoder = mlp(c.node_dim, c.hidden, c.hidden, layers=c.mlp_layers, dropout=c.dropout,
                                    last_plain=False)
            self.edge_encoder = mlp(c.edge_dim, c.hidden, c.hidden, layers=c.mlp_layers, dropout=c.dropout,
                                    last_plain=False)
            self.global_encoder = mlp(c.global_dim, c.hidden, c.hidden, layers=c.mlp_layers, dropout=c.dropout,
                                      last_plain=False)
            self.blocks = nn.ModuleList(SeerBlock(c.hidden, dropout=c.dropout, mlp_layers=c.mlp_layers)
                                        for _ in range(c.layers))
            self.readout = MultiAggregation(["mean", "max"])
            width = 3 * c.hidden if c.readout == "pool" else 2 * c.hidden
            self.heads = nn.ModuleDict({name: mlp(width, c.hidden, 1, layers=c.mlp_layers,
                                                  dropout=c.dropout) for name in c.heads})

    def embed(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor, u: Tensor, batch: Tensor,
              num_graphs: int) -> Tensor:
        """Graph embeddings from standardized inputs: concat(mean nodes, max nodes, global node).

        Shapes:
            Returns ``[num_graphs, 3 * hidden]``.
        """
        h, g = self._propagate(x, edge_index, edge_attr, u, batch)
        return torch.cat([self.readout(h, batch, dim_size=num_graphs), g], dim=-1)

    def _propagate(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor, u: Tensor, batch: Tensor
                   ) -> tuple[Tensor, Tensor]:
        """Node and global states after message passing ([N, hidden], [G, hidden])."""
        h, e, g = self.node_encoder(x), self.edge_encoder(edge_attr), self.global_encoder(u)
        for block in self.blocks:
            h, e, g = block(h, e, g, edge_index, batch)
        return h, g

    def _heads_standardized(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor, u: Tensor, batch: Tensor,
                            num_graphs: int) -> Tensor:
        if self.config.readout == "pool":
            z = self.embed(x, edge_index, edge_attr, u, batch, num_graphs)
            return torch.cat([head(z) for head in self.heads.values()], dim=-1)
        h, g = self._propagate(x, edge_index, edge_attr, u, batch)
        node = torch.cat([head(torch.cat([h, g[batch]], dim=-1)) for head in self.heads.values()], dim=-1)
        # node shares in the heads' log space, summed in linear space, back to standardized log space
        total = graph_log_sum(node * self.y_std + self.y_mean, batch, num_graphs)
        return (total - self.y_mean) / self.y_std
