"""Per-column mean/std of graph inputs and log-targets, computed once from training graphs."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

STAT_NAMES = ("x", "edge", "u", "y")
"""Stat groups: node features `x`, edge features `edge_attr`, globals `u`, and log-targets `log(y)`."""


class _Moments:
    """Running sum and sum of squares per column, in float64, ignoring non-finite entries."""

    def __init__(self, dim: int) -> None:
        self.sum = torch.zeros(dim, dtype=torch.float64)
        self.sq = torch.zeros(dim, dtype=torch.float64)
        self.count = torch.zeros(dim, dtype=torch.float64)

    def add(self, values: torch.Tensor) -> None:
        v = values.detach().to("cpu", torch.float64).reshape(-1, self.sum.numel())
        ok = torch.isfinite(v)
        v = torch.where(ok, v, 0.0)
        self.sum += v.sum(0)
        self.sq += (v * v).sum(0)
        self.count += ok.sum(0)

    def result(self, min_std: float, constant_std: float) -> tuple[torch.Tensor, torch.Tensor]:
        n = self.count.clamp(min=1.0)
        mean = self.sum / n
        std = (self.sq / n - mean * mean).clamp(min=0.0).sqrt()
        constant = std <= min_std * mean.abs().clamp(min=1.0)  # float rounding leaves ~1e-7 relative spread
        std = torch.where(constant, torch.full_like(std, constant_std), std)
        return mean.float(), std.float()


def feature_stats(graphs: Iterable[Any], *, node_dim: int, edge_dim: int, global_dim: int,
                  num_heads: int, min_std: float = 1e-5, drop_constant: bool = True,
                  y_log_offset: Callable[[Any], torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
    """Column means and standard deviations of `graphs` (PyG `Data` or `Batch` objects).

    Targets are summarized in log space (the space the heads predict in); entries of `y` that are not finite and
    positive are skipped, so a graph missing one metric (NaN) still counts for the others. `y_log_offset` (a
    graph -> [G, 1] tensor) is subtracted from the log targets first, e.g. the log work of a model that predicts
    per unit of work.

    An input column whose standard deviation is at most `min_std` x max(1, |mean|) (float rounding alone leaves
    ~1e-7 relative spread) taught the model nothing, and its weights never moved from their initial values: with
    `drop_constant` it gets std inf, so it standardizes to 0 whatever value it takes later (the target descriptors
    of a machine other than the one the data came from would otherwise enter through untrained weights, or be
    divided by a rounding error); without, std 1 (only centered). A constant target column gets std 1.

    Shapes:
        Returns ``{"x_mean", "x_std"}: [node_dim]``, ``{"edge_mean", "edge_std"}: [edge_dim]``,
        ``{"u_mean", "u_std"}: [global_dim]``, ``{"y_mean", "y_std"}: [num_heads]``.
    """
    acc = {"x": _Moments(node_dim), "edge": _Moments(edge_dim), "u": _Moments(global_dim), "y": _Moments(num_heads)}
    for g in graphs:
        acc["x"].add(g.x)
        if edge_dim and getattr(g, "edge_attr", None) is not None:
            acc["edge"].add(g.edge_attr)
        if global_dim and getattr(g, "u", None) is not None:
            acc["u"].add(g.u)
        y = getattr(g, "y", None)
        if y is not None:
            y = y.detach().to(torch.float64).reshape(-1, num_heads)
            log_y = torch.where(y > 0, y.clamp(min=1e-300).log(), float("nan"))
            acc["y"].add(log_y if y_log_offset is None else log_y - y_log_offset(g).to(torch.float64))
    out: dict[str, torch.Tensor] = {}
    for name, m in acc.items():
        out[f"{name}_mean"], out[f"{name}_std"] = m.result(
            min_std, float("inf") if drop_constant and name != "y" else 1.0)
    return out
