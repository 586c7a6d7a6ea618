"""`KernelSumNet`: end-to-end latency as the sum of per-kernel predictions made in graph context (hierarchical)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor, nn

from tvm_cost.models.base import graph_inputs
from tvm_cost.models.config import ModelConfig
from tvm_cost.models.layers import graph_log_sum, mlp
from tvm_cost.models.seeding import isolated_rng
from tvm_cost.models.seernet import SeerNet

MIN_NODE_MS = 1e-3
"""Floor of node targets (1 us): nodes TVM runs as views (0 ms measured) still need a finite log target."""


class KernelSumNet(SeerNet):
    """SeerNet's encoders and message passing, then one head per node: the node's kernel latency in context.

    The survey seed's lesson (a high-level predictor improves when it is fed low-level predictions) taken to its
    simplest form: the model predicts each fused kernel's latency from the kernel's own features plus what message
    passing tells it about its neighbours and the whole model (global node), and the end-to-end latency is their
    sum, as it is on a CPU running one kernel after another. It trains on per-kernel times
    (``measure-e2e --per-kernel``) and on the end-to-end time together (`tvm_cost.train.kernel_sum`), and the
    per-node predictions are the per-subgraph table of ``tvm-cost estimate``.

    ``y_mean``/``y_std`` standardize node log-ms (see `fit_normalization`), not graph labels.

    Shapes:
        forward(data) -> [G, 1] natural log of the end-to-end latency (ms); node_log_ms(data) -> [N].
    """

    def __init__(self, config: ModelConfig) -> None:
        if tuple(config.heads) != ("latency",):
            raise ValueError(f"KernelSumNet predicts latency only; heads={config.heads!r}")
        super().__init__(config)
        with isolated_rng(config.seed + 1):
            self.heads = nn.ModuleDict({"latency": mlp(2 * config.hidden, config.hidden, 1,
                                                       layers=config.mlp_layers, dropout=config.dropout)})

    def fit_normalization(self, graphs: Iterable[Any]) -> KernelSumNet:
        """Input stats as `SeerNet`; target stats from the nodes' log `node_ms` (floored at `MIN_NODE_MS`)."""
        graphs = list(graphs)
        super().fit_normalization(graphs)
        logs = torch.cat([node_targets(g) for g in graphs])
        logs = logs[torch.isfinite(logs)]
        if logs.numel() == 0:
            raise ValueError("no graph has per-node times (node_ms); measure with `measure-e2e --per-kernel`")
        std = logs.std(unbiased=False).clamp(min=1e-6)
        self.set_normalization({"y_mean": logs.mean().reshape(1), "y_std": std.reshape(1)})
        return self

    def node_log_ms_tensors(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None, u: Tensor | None,
                            batch: Tensor, num_graphs: int) -> Tensor:
        """Natural log of each node's predicted kernel ms, from raw tensors ([N])."""
        x = self._standardize(x, "x", x.shape[0], self.x_mean)
        edge_attr = self._standardize(edge_attr, "edge", edge_index.shape[1], x)
        u = self._standardize(u, "u", num_graphs, x)
        h, e, g = self.node_encoder(x), self.edge_encoder(edge_attr), self.global_encoder(u)
        for block in self.blocks:
            h, e, g = block(h, e, g, edge_index, batch)
        z = self.heads["latency"](torch.cat([h, g[batch]], dim=-1)).squeeze(-1)
        return z * self.y_std + self.y_mean

    def node_log_ms(self, data: Any) -> Tensor:
        """Natural log of each node's predicted kernel ms ([N]) for a `Data` or `Batch`."""
        x, edge_index, edge_attr, u, batch, num_graphs = graph_inputs(data)
        if batch is None:
            batch = torch.zeros(x.shape[0], dtype=torch.long, device=x.device)
        return self.node_log_ms_tensors(x, edge_index, edge_attr, u, batch, num_graphs)

    def forward_tensors(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None = None,
                        u: Tensor | None = None, batch: Tensor | None = None,
                        num_graphs: int | None = None) -> Tensor:
        """Log of the summed node predictions per graph ([G, 1])."""
        if batch is None:
            batch = torch.zeros(x.shape[0], dtype=torch.long, device=x.device)
        if num_graphs is None:
            num_graphs = int(batch.max()) + 1 if batch.numel() else 1
        node = self.node_log_ms_tensors(x, edge_index, edge_attr, u, batch, num_graphs)
        return graph_log_sum(node, batch, num_graphs).unsqueeze(-1)


def node_targets(data: Any) -> Tensor:
    """Log of measured node ms (`data.node_ms`), floored at `MIN_NODE_MS` ([N]); NaN stays NaN (a graph measured
    end to end only, see `without_node_times`)."""
    node_ms = getattr(data, "node_ms", None)
    if node_ms is None:
        raise ValueError("graph has no per-node times (node_ms); measure with `measure-e2e --per-kernel`")
    return node_ms.to(torch.float32).clamp(min=MIN_NODE_MS).log()


def without_node_times(data: Any) -> Any:
    """A copy of `data` whose nodes have unknown times (NaN), so graphs measured only end to end can be batched
    with per-kernel ones; `KernelSumLoss` trains them through the graph term only."""
    out = data.clone()
    out.node_ms = torch.full((data.num_nodes,), float("nan"))
    return out
