"""Building blocks of `SeerNet`: a LayerNorm MLP and the SeerBlock that updates edges, nodes and the global node."""

from __future__ import annotations

import warnings

import torch
from torch import Tensor, nn
from torch_geometric.nn.aggr import MultiAggregation
from torch_geometric.utils import scatter


def mlp(in_dim: int, hidden: int, out_dim: int, *, layers: int, dropout: float, last_plain: bool = True
        ) -> nn.Sequential:
    """``layers`` Linear layers, each but the last followed by LayerNorm, ReLU and Dropout.

    With ``last_plain=False`` the last Linear is also followed by ReLU and Dropout (an encoder's output).

    Shapes:
        [*, in_dim] -> [*, out_dim]
    """
    mods: list[nn.Module] = []
    dims = [in_dim] + [hidden] * (layers - 1) + [out_dim]
    for i in range(layers):
        with warnings.catch_warnings():  # in_dim 0 (no edge or global features) gives a bias-only layer
            warnings.filterwarnings("ignore", "Initializing zero-element tensors")
            mods.append(nn.Linear(dims[i], dims[i + 1]))
        if i < layers - 1:
            mods += [nn.LayerNorm(dims[i + 1]), nn.ReLU(), nn.Dropout(dropout)]
        elif not last_plain:
            mods += [nn.ReLU(), nn.Dropout(dropout)]
    return nn.Sequential(*mods)


class SeerBlock(nn.Module):
    r"""One round of graph-network message passing (Battaglia et al. 2018) as in PerfSeer's SeerNet.

    PerfSeer: An Efficient and Accurate Deep Learning Models Performance Predictor, Zhao et al. 2025,
    https://arxiv.org/abs/2502.01206 . Edges, nodes and a per-graph global vector ("global node") are updated in
    turn, each with a residual connection and a post-LayerNorm; every aggregation is max and mean concatenated
    (PerfSeer's synergistic max-mean aggregation: mean sees totals, max sees the bottleneck):

    .. math::
        e'_{ij} &= \mathrm{LN}(e_{ij} + \phi_e[e_{ij}, h_i, h_j, u]) \\
        h'_i &= \mathrm{LN}(h_i + \phi_h[h_i, \mathrm{agg}_{j \to i} e', \mathrm{agg}_{i \to j} e', u]) \\
        u' &= \mathrm{LN}(u + \phi_u[u, \mathrm{agg}_i h', \mathrm{agg}_{ij} e'])

    Nodes aggregate their incoming and their outgoing edges separately, so information travels both ways along
    the (acyclic) operator graph in every layer.

    Args:
        hidden: Width of edge, node and global states.
        dropout: Dropout inside the update MLPs.
        mlp_layers: Linear layers per update MLP.

    Shapes:
        h: [N, hidden], e: [E, hidden], u: [G, hidden], edge_index: [2, E], batch: [N] ->
        (h', e', u') of the same shapes.
    """

    def __init__(self, hidden: int, *, dropout: float, mlp_layers: int) -> None:
        super().__init__()
        self.aggr = MultiAggregation(["mean", "max"])
        self.edge_mlp = mlp(4 * hidden, hidden, hidden, layers=mlp_layers, dropout=dropout)
        self.node_mlp = mlp(6 * hidden, hidden, hidden, layers=mlp_layers, dropout=dropout)
        self.global_mlp = mlp(5 * hidden, hidden, hidden, layers=mlp_layers, dropout=dropout)
        self.edge_norm = nn.LayerNorm(hidden)
        self.node_norm = nn.LayerNorm(hidden)
        self.global_norm = nn.LayerNorm(hidden)

    def forward(self, h: Tensor, e: Tensor, u: Tensor, edge_index: Tensor, batch: Tensor
                ) -> tuple[Tensor, Tensor, Tensor]:
        src, dst = edge_index
        n, g = h.shape[0], u.shape[0]
        edge_batch = batch[src]
        e = self.edge_norm(e + self.edge_mlp(torch.cat([e, h[src], h[dst], u[edge_batch]], dim=-1)))
        incoming = self.aggr(e, dst, dim_size=n)
        outgoing = self.aggr(e, src, dim_size=n)
        h = self.node_norm(h + self.node_mlp(torch.cat([h, incoming, outgoing, u[batch]], dim=-1)))
        nodes = self.aggr(h, batch, dim_size=g)
        edges = self.aggr(e, edge_batch, dim_size=g)
        u = self.global_norm(u + self.global_mlp(torch.cat([u, nodes, edges], dim=-1)))
        return h, e, u


def graph_log_sum(node_log: Tensor, batch: Tensor, num_graphs: int) -> Tensor:
    """``log(sum(exp(node_log)))`` per graph, computed stably: [N] -> [G], or [N, H] -> [G, H] per column."""
    peak = scatter(node_log.detach(), batch, dim=0, dim_size=num_graphs, reduce="max")
    total = scatter((node_log - peak[batch]).exp(), batch, dim=0, dim_size=num_graphs, reduce="sum")
    return total.log() + peak
