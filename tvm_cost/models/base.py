"""`GraphCostModel`: what every graph cost model shares (standardized inputs, log-metric heads, MC dropout)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import torch
from torch import Tensor, nn

from tvm_cost.models.config import ModelConfig
from tvm_cost.models.normalization import STAT_NAMES, feature_stats
from tvm_cost.models.seeding import isolated_rng


def graph_inputs(data: Any) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None, Tensor | None, int]:
    """``(x, edge_index, edge_attr, u, batch, num_graphs)`` of a PyG `Data` (one graph) or `Batch`."""
    batch = getattr(data, "batch", None)
    num_graphs = 1 if batch is None else int(data.num_graphs)
    return (data.x, data.edge_index, getattr(data, "edge_attr", None), getattr(data, "u", None), batch,
            num_graphs)


def log_work(config: ModelConfig, u: Tensor | None, num_graphs: int) -> Tensor:
    """ln(sum of (1 + count)) over the raw `u` columns `config.work_globals` (ln(1 + count) each): what `forward`
    adds to the heads' log-metric per unit of work. Zeros when the config has no work columns.

    Shapes:
        u: [G, global_dim] -> [G, 1]
    """
    if not config.work_globals:
        return torch.zeros(num_graphs, 1)
    if u is None:
        raise ValueError("the model predicts per unit of work (work_globals set), but the graph has no u")
    cols = u.reshape(num_graphs, -1)[:, list(config.work_globals)].to(torch.float32)
    return torch.logsumexp(cols, dim=1, keepdim=True)


def graph_log_work(config: ModelConfig, data: Any) -> Tensor:
    """`log_work` of a PyG `Data` (one graph) or `Batch` ([G, 1])."""
    *_, u, _, num_graphs = graph_inputs(data)
    return log_work(config, u, num_graphs)


def config_feature_stats(config: ModelConfig, graphs: Iterable[Any], *, drop_constant: bool = True
                         ) -> dict[str, Tensor]:
    """`feature_stats` of `graphs` at the dims of `config`; log targets per unit of work if it predicts so."""
    offset = (lambda g: graph_log_work(config, g)) if config.work_globals else None
    return feature_stats(graphs, node_dim=config.node_dim, edge_dim=config.edge_dim, global_dim=config.global_dim,
                         num_heads=len(config.heads), drop_constant=drop_constant, y_log_offset=offset)


class GraphCostModel(nn.Module):
    """Base class: raw feature arrays in, one log-metric per head and graph out.

    Inputs are standardized inside the model with buffers (`x_mean`, `x_std`, `edge_mean`, ...) that are saved
    with the weights, so callers feed raw `SCHEMA` arrays. Set them once from training graphs with
    `fit_normalization`; until then they are the identity (mean 0, std 1). Heads predict in standardized log
    space and are mapped back with `y_mean`/`y_std`, so ``forward`` returns ``log(metric)`` directly (with
    `config.work_globals`, plus the graph's `log_work`: the heads and `y_mean`/`y_std` are per unit of work).

    Subclasses implement `_heads_standardized`.

    Args:
        config: The architecture.
    """

    x_mean: Tensor
    x_std: Tensor
    edge_mean: Tensor
    edge_std: Tensor
    u_mean: Tensor
    u_std: Tensor
    y_mean: Tensor
    y_std: Tensor

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        dims = {"x": config.node_dim, "edge": config.edge_dim, "u": config.global_dim, "y": len(config.heads)}
        for name in STAT_NAMES:
            self.register_buffer(f"{name}_mean", torch.zeros(dims[name]))
            self.register_buffer(f"{name}_std", torch.ones(dims[name]))

    # -- normalization ---------------------------------------------------------------------------------------
    def fit_normalization(self, graphs: Iterable[Any]) -> GraphCostModel:
        """Set the standardization buffers from training `graphs` (any iterable of `Data`/`Batch`); returns self."""
        self.set_normalization(config_feature_stats(self.config, graphs))
        return self

    def set_normalization(self, stats: Mapping[str, Tensor]) -> None:
        """Copy `stats` (keys ``x_mean``, ``x_std``, ..., ``y_std``; missing keys are left as they are)."""
        for key, value in stats.items():
            buf = getattr(self, key, None)
            if not isinstance(buf, Tensor) or key.rsplit("_", 1)[0] not in STAT_NAMES:
                raise ValueError(f"unknown normalization stat {key!r}")
            if value.shape != buf.shape:
                raise ValueError(f"normalization stat {key!r} has shape {tuple(value.shape)}, "
                                 f"expected {tuple(buf.shape)}")
            buf.copy_(value)

    def normalization(self) -> dict[str, Tensor]:
        """A copy of the standardization buffers."""
        return {f"{n}_{s}": getattr(self, f"{n}_{s}").clone() for n in STAT_NAMES for s in ("mean", "std")}

    def _standardize(self, value: Tensor | None, name: str, rows: int, ref: Tensor) -> Tensor:
        mean, std = getattr(self, f"{name}_mean"), getattr(self, f"{name}_std")
        if value is None or mean.numel() == 0:
            return ref.new_zeros(rows, mean.numel())
        z = (value.to(mean.dtype).reshape(rows, mean.numel()) - mean) / std
        return torch.nan_to_num(z, nan=0.0).clamp(-self.config.input_clip, self.config.input_clip)

    # -- forward ---------------------------------------------------------------------------------------------
    def forward(self, data: Any) -> Tensor:
        """Log-metric predictions for a `Data` (one graph) or a `Batch`.

        Shapes:
            Returns ``[num_graphs, len(config.heads)]``.
        """
        return self.forward_tensors(*graph_inputs(data))

    def forward_tensors(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None = None,
                        u: Tensor | None = None, batch: Tensor | None = None,
                        num_graphs: int | None = None) -> Tensor:
        """Log-metric predictions from raw tensors.

        Shapes:
            x: [N, node_dim], edge_index: [2, E], edge_attr: [E, edge_dim] or None, u: [G, global_dim] or None,
            batch: [N] graph of each node (None: all in graph 0) -> [G, len(config.heads)].
        """
        if batch is None:
            batch = torch.zeros(x.shape[0], dtype=torch.long, device=x.device)
        if num_graphs is None:
            num_graphs = int(batch.max()) + 1 if batch.numel() else 1
        work = log_work(self.config, u, num_graphs).to(self.y_mean)
        x = self._standardize(x, "x", x.shape[0], self.x_mean)
        edge_attr = self._standardize(edge_attr, "edge", edge_index.shape[1], x)
        u = self._standardize(u, "u", num_graphs, x)
        out = self._heads_standardized(x, edge_index, edge_attr, u, batch, num_graphs)
        return out * self.y_std + self.y_mean + work

    def _heads_standardized(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor, u: Tensor, batch: Tensor,
                            num_graphs: int) -> Tensor:
        """Standardized log-metrics from standardized inputs ([G, heads]); subclasses implement it."""
        raise NotImplementedError

    # -- uses ------------------------------------------------------------------------------------------------
    def head_index(self, head: str | None = None) -> int:
        """Column of `head` in the output; None means "latency" if there is such a head, else the first."""
        heads = self.config.heads
        if head is None:
            return heads.index("latency") if "latency" in heads else 0
        if head not in heads:
            raise ValueError(f"unknown head {head!r}; choices: {', '.join(heads)}")
        return heads.index(head)

    def score(self, data: Any, *, head: str | None = None) -> Tensor:
        """Ranking score, higher is better: minus the predicted log-latency (differentiable, current mode).

        Shapes:
            Returns ``[num_graphs]``.
        """
        return -self(data)[:, self.head_index(head)]

    @torch.no_grad()
    def predict(self, data: Any, *, samples: int = 1, seed: int = 0) -> tuple[Tensor, Tensor]:
        """Mean and standard deviation of log-metric predictions by MC dropout (Gal & Ghahramani 2016).

        With ``samples == 1`` this is the deterministic eval-mode prediction and std is 0. Otherwise dropout stays
        on for `samples` forward passes drawn from a generator seeded by `seed` (global RNG untouched). A model
        with ``dropout == 0`` returns std 0.

        Shapes:
            Returns ``(mean, std)``, each ``[num_graphs, len(config.heads)]``.
        """
        was_training = self.training
        self.eval()
        try:
            if samples <= 1:
                out = self(data)
                return out, torch.zeros_like(out)
            for m in self.modules():
                if isinstance(m, nn.Dropout):
                    m.train()
            with isolated_rng(seed, self.y_mean.device):
                outs = torch.stack([self(data) for _ in range(samples)])
            return outs.mean(0), outs.std(0, unbiased=False)
        finally:
            self.train(was_training)

    def init_args(self) -> dict[str, Any]:
        """Constructor arguments besides `config` (JSON-ready), for checkpoints."""
        return {}
