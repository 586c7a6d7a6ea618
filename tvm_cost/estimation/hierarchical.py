"""Hierarchical GNNs: graph models whose node inputs include the kernel-level model's predicted latency.

The survey seed's lesson (a high-level predictor improves when it takes low-level predictions as inputs): each
node gets one more column, log of `KernelBoost`'s predicted ms for that kernel. Two ways to use it:

- correction form (`train_hierarchical`): a `ResidualKernelSumNet` learns in graph context a correction to each
  kernel's predicted time, trained on per-kernel and end-to-end times;
- overhead form (`train_overhead_gnn`): a SeerNet predicts only what no kernel-level model can see, the run's
  time between and around its kernels, as the ratio of the end-to-end time to the sum of the measured kernel
  times; the estimate is that ratio times the trees' summed kernels.

Training graphs get out-of-fold predictions (trees fitted without that graph), or the GNN would learn to trust
predictions that are only that good on data the trees have seen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import torch

from tvm_cost.estimation.graph_models import predict_latency_ms, train_graph_model
from tvm_cost.estimation.kernel_boost import KernelBoost
from tvm_cost.models.kernel_sum import MIN_NODE_MS, KernelSumNet, node_targets


class ResidualKernelSumNet(KernelSumNet):
    """A `KernelSumNet` that predicts a correction to the kernel column: node log ms = the trees' log ms + what
    message passing adds. Its head starts at zero, so an untrained model is the trees; ``y_std`` is the spread of
    the trees' out-of-fold errors, the scale a correction should have."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        last = cast(torch.nn.Linear, cast(torch.nn.Sequential, self.heads["latency"])[-1])
        torch.nn.init.zeros_(last.weight)
        torch.nn.init.zeros_(last.bias)

    def fit_normalization(self, graphs: Any) -> ResidualKernelSumNet:
        graphs = list(graphs)
        super().fit_normalization(graphs)
        resid = torch.cat([node_targets(g) - g.x[:, -1] for g in graphs])
        resid = resid[torch.isfinite(resid)]
        self.set_normalization({"y_mean": torch.zeros(1), "y_std": resid.std(unbiased=False).clamp(min=1e-3)
                                .reshape(1)})
        return self

    def node_log_ms_tensors(self, x: torch.Tensor, *args: Any) -> torch.Tensor:
        return x[:, -1] + super().node_log_ms_tensors(x, *args)


def with_kernel_column(item: Any, node_ms: np.ndarray) -> Any:
    """A copy of `item` whose `x` gains a last column: log of `node_ms` (predicted ms per node)."""
    out = item.clone()
    column = torch.from_numpy(np.log(np.maximum(node_ms, MIN_NODE_MS))).to(item.x.dtype)
    out.x = torch.cat([item.x, column.reshape(-1, 1)], dim=1)
    return out


def add_kernel_predictions(train: Sequence[Any], *, seed: int = 0, folds: int = 5,
                           rounds: int = 600) -> tuple[list[Any], KernelBoost]:
    """`train` with out-of-fold `KernelBoost` predictions (`folds` folds), and trees fitted on all of `train` for
    every other item."""
    fold = np.random.default_rng(seed).permutation(len(train)) % folds
    out: list[Any] = list(train)
    for k in range(folds):
        trees = KernelBoost(seed=seed, rounds=rounds).fit([train[i] for i in np.flatnonzero(fold != k).tolist()])
        for i in np.flatnonzero(fold == k).tolist():
            out[i] = with_kernel_column(train[i], trees.node_ms(train[i])[0])
    return out, KernelBoost(seed=seed, rounds=rounds).fit(train)


def train_hierarchical(train: Sequence[Any], val: Sequence[Any], *, seed: int, epochs: int,
                       hidden: int = 64) -> tuple[Any, Any]:
    """The hierarchical `KernelSumNet` trained on `train` (early-stopped on `val`), and a function that adds the
    kernel column to new items (trees fitted on all of `train`). Items need `node_ms`."""
    from tvm_cost.features.schema import SCHEMA
    from tvm_cost.models import ModelConfig
    from tvm_cost.train import TrainConfig, train as train_loop
    from tvm_cost.train.kernel_sum import KernelSumLoss

    train_aug, trees = add_kernel_predictions(train, seed=seed)

    def augment(items: Sequence[Any]) -> list[Any]:
        return [with_kernel_column(d, trees.node_ms(d)[0]) for d in items]

    config = ModelConfig.for_schema(SCHEMA, hidden=hidden, layers=3, dropout=0.1, seed=seed)
    config = config.replace(node_dim=config.node_dim + 1)
    model = ResidualKernelSumNet(config)
    train_loop(model, train_aug, augment(val) or None, loss_fn=KernelSumLoss(model),
               config=TrainConfig(epochs=epochs, batch_size=16, lr=2e-3, patience=40, seed=seed))
    return model.eval(), augment


def overhead_labels(items: Sequence[Any]) -> list[Any]:
    """Copies of the items with every kernel timed whose label ``y[:, 0]`` is the run's overhead over its kernels:
    end-to-end ms / sum of the measured kernel ms (1.0: the kernels are the whole run)."""
    out = []
    for d in items:
        kernel_ms = d.node_ms.to(torch.float64)
        if torch.isfinite(kernel_ms).all() and float(kernel_ms.sum()) > 0:
            c = d.clone()
            c.y = d.y[:, :1].clone()
            c.y[:, 0] = d.y[0, 0] / float(kernel_ms.sum())
            out.append(c)
    return out


@dataclass
class OverheadGNN:
    """The overhead-form hierarchical estimate: `kernels`' summed prediction x `model`'s predicted overhead ratio,
    the model reading `columns`' per-kernel predictions as its last node input."""

    kernels: KernelBoost
    columns: KernelBoost
    model: Any

    def overhead(self, items: Sequence[Any]) -> np.ndarray:
        """Predicted end-to-end / kernel-sum ratio of each item. Shapes: -> [len(items)]."""
        return predict_latency_ms(self.model, [with_kernel_column(d, self.columns.node_ms(d)[0]) for d in items])

    def predict(self, items: Sequence[Any]) -> np.ndarray:
        """End-to-end ms of each item. Shapes: -> [len(items)]."""
        return self.kernels.predict(items) * self.overhead(items)


def train_overhead_gnn(train: Sequence[Any], val: Sequence[Any], *, seed: int, epochs: int,
                       rounds: int = 600) -> OverheadGNN:
    """The overhead-form hierarchical model: a SeerNet on `overhead_labels` with out-of-fold kernel columns
    (early-stopped on `val`), over `KernelBoost` (`rounds` per member) fitted on train + val. Items need `y`
    [1, 1] and `node_ms`."""
    train_aug, columns = add_kernel_predictions(train, seed=seed, rounds=rounds)
    val_aug = [with_kernel_column(d, columns.node_ms(d)[0]) for d in val]
    model = train_graph_model("seernet", overhead_labels(train_aug), overhead_labels(val_aug), seed=seed,
                              epochs=epochs, heads=("latency",), extra_node_columns=1)
    kernels = KernelBoost(seed=seed, rounds=rounds).fit(list(train) + list(val))
    return OverheadGNN(kernels=kernels, columns=columns, model=model)
