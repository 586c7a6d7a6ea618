"""`KernelSumLoss`: the objective of `KernelSumNet`, per-kernel times and the end-to-end time together."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import torch
from torch import Tensor

from tvm_cost.models.config import ModelConfig
from tvm_cost.models.ensemble import EnsembleModel
from tvm_cost.models.kernel_sum import KernelSumNet, node_targets
from tvm_cost.models.layers import graph_log_sum
from tvm_cost.train.config import TrainConfig
from tvm_cost.train.loop import train


class KernelSumLoss:
    """Two terms for `tvm_cost.train.train`: ``node`` (squared log error of each kernel's time) and ``graph``
    (squared log error of their sum against the measured end-to-end latency), both in units of the node
    targets' standard deviation so neither swamps the other.

    The node term gives hundreds of labels per model; the graph term keeps the sum honest where per-kernel timing
    misses work between kernels.

    Args:
        model: The model being trained (its node predictions are recomputed here; the loop's graph-level output
            is the log of their sum and carries no per-node information).
        graph_weight: Weight of the graph term.
    """

    def __init__(self, model: KernelSumNet, *, graph_weight: float = 1.0) -> None:
        self.model, self.graph_weight = model, graph_weight

    def __call__(self, pred: Tensor, batch: Any) -> dict[str, Tensor]:
        """Shapes: pred [G, 1] (unused), batch with y [G, 1] and node_ms [N] -> {"node", "graph"} scalars."""
        node_log = self.model.node_log_ms(batch)
        scale = self.model.y_std.square()
        target = node_targets(batch)
        known = torch.isfinite(target)  # graphs measured end to end only have NaN node times
        node = ((node_log[known] - target[known]) ** 2).sum() / known.sum().clamp(min=1) / scale
        graph_log = graph_log_sum(node_log, batch.batch, int(batch.num_graphs))
        graph = ((graph_log - batch.y[:, 0].log()) ** 2).mean() / scale
        return {"node": node.squeeze(), "graph": self.graph_weight * graph.squeeze()}


def train_kernel_sum(train_set: Sequence[Any], val_set: Sequence[Any] | None, *, config: ModelConfig,
                     train_config: TrainConfig, members: int = 1) -> KernelSumNet | EnsembleModel:
    """Train one `KernelSumNet`, or an ensemble of `members` trained one after another (member ``i`` from seed
    ``config.seed + i``; their spread is the estimate's uncertainty band). Items need `y` [1, 1] and `node_ms`."""
    model: KernelSumNet | EnsembleModel = KernelSumNet(config) if members == 1 else \
        EnsembleModel(config, kind="kernel_sum", size=members)
    nets = [model] if isinstance(model, KernelSumNet) else cast(list[KernelSumNet], list(model.members))
    for i, net in enumerate(nets):
        train(net, train_set, val_set, config=train_config.replace(seed=train_config.seed + i),
              loss_fn=KernelSumLoss(net))
    return model.eval()
