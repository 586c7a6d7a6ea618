"""`TaskLoss`: the default training objective, one named term per task (what PCGrad treats as tasks)."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from tvm_cost.train.config import TrainConfig
from tvm_cost.train.losses import centered_log_mse_loss, listmle_loss, listnet_loss, log_mse_loss, \
    pairwise_ranking_loss


class TaskLoss:
    """Weighted loss terms of a batch: ``mse_<head>`` per head, plus ``rank``, ``listwise`` and ``task_mse`` when
    enabled.

    Targets come from the batch: ``batch.y`` ``[G, heads]`` holds the measured metrics in natural units
    (positive; NaN where missing) and ``batch.group`` ``[G]`` the group ids ranking terms compare within. The
    ranking terms use the latency head (``"latency"``, else the first head) as the score. Graphs whose optional
    ``batch.rank_only`` [G] is true (measured on another machine) count in the ranking and per-task terms but not in
    the ``mse_*`` terms: they teach how candidates of a task compare, not the absolute times of this machine.

    Args:
        config: Weights and kinds of the ranking terms.
        heads: The model's head names, in output order.
    """

    def __init__(self, config: TrainConfig, heads: tuple[str, ...]) -> None:
        self.config, self.heads = config, heads
        self.rank_head = heads.index("latency") if "latency" in heads else 0

    def __call__(self, pred: Tensor, batch: Any) -> dict[str, Tensor]:
        """Weighted terms; their sum is the total loss.

        Shapes:
            pred: [G, heads] log-metrics; batch.y: [G, heads]; batch.group: [G] -> {name: scalar}.
        """
        y = batch.y.reshape(pred.shape).to(pred.dtype)
        rank_only = getattr(batch, "rank_only", None)
        y_abs = y if rank_only is None else y.masked_fill(rank_only.reshape(-1, 1).bool(), float("nan"))
        terms = {f"mse_{h}": log_mse_loss(pred[:, i], y_abs[:, i]) for i, h in enumerate(self.heads)}
        c = self.config
        group = getattr(batch, "group", None)
        if group is not None and (c.rank_weight > 0 or c.listwise_weight > 0 or c.task_mse_weight > 0):
            score, latency, group = -pred[:, self.rank_head], y[:, self.rank_head], group.reshape(-1)
            if c.rank_weight > 0:
                terms["rank"] = c.rank_weight * pairwise_ranking_loss(score, latency, group, kind=c.rank_loss,
                                                                      top_weight=c.rank_top_weight)
            if c.listwise_weight > 0:
                fn = listmle_loss if c.listwise == "listmle" else listnet_loss
                terms["listwise"] = c.listwise_weight * fn(score, latency, group)
            if c.task_mse_weight > 0:
                terms["task_mse"] = c.task_mse_weight * centered_log_mse_loss(-score, latency, group)
        return terms
