"""`TrainConfig`: how a graph cost model is trained, written into checkpoints' ``extra`` by callers."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True)
class TrainConfig:
    """Settings of `tvm_cost.train.train`.

    Args:
        epochs: Maximum epochs.
        batch_size: Graphs per batch (per rank under DDP).
        lr, weight_decay: AdamW settings.
        schedule: "cosine" (annealed to 0 over `epochs`, stepped per epoch), "plateau" (`ReduceLROnPlateau` on the
            monitored value) or "none".
        plateau_factor, plateau_patience: `ReduceLROnPlateau` settings.
        patience: Early stopping after this many epochs without improvement of `monitor`; None disables it.
        min_delta: Smallest change of `monitor` that counts as an improvement.
        monitor: History column to monitor, e.g. "val_loss", "val_pairwise_acc", "val_peak@1"; "train_loss" is
            used when there is no validation set.
        monitor_mode: "min" or "max" for `monitor`.
        restore_best: Load the weights of the best monitored epoch at the end.
        grad_clip: Max global gradient norm; None disables clipping.
        rank_weight, rank_loss: Weight and kind of the pairwise ranking loss on the latency head (0 disables).
        rank_top_weight: `pairwise_ranking_loss`'s `top_weight`: pairs weighted toward each task's fastest
            candidates (0: all pairs alike), for a model that orders good schedules, the choice late in a search.
        listwise_weight, listwise: Weight and kind ("listmle" or "listnet") of the listwise loss (0 disables).
        task_mse_weight: Weight of the log-MSE centered per group on the latency head (0 disables), a regression
            of how candidates differ within their task.
        pcgrad: Combine the task losses (one regression loss per head, plus ranking terms) with PCGrad.
        batching: "random" batches, or "group" batches made of whole groups (needed for ranking losses to see
            many same-group pairs).
        fit_normalization: Set the model's standardization stats from the training set before training.
        seed: Seed of shuffling, dropout and PCGrad's task order.
        device: Torch device to train on.
    """

    epochs: int = 100
    batch_size: int = 64
    lr: float = 1e-3
    weight_decay: float = 1e-4
    schedule: Literal["cosine", "plateau", "none"] = "cosine"
    plateau_factor: float = 0.5
    plateau_patience: int = 5
    patience: int | None = 20
    min_delta: float = 0.0
    monitor: str = "val_loss"
    monitor_mode: Literal["min", "max"] = "min"
    restore_best: bool = True
    grad_clip: float | None = 5.0
    rank_weight: float = 0.0
    rank_loss: Literal["logistic", "hinge"] = "logistic"
    rank_top_weight: float = 0.0
    listwise_weight: float = 0.0
    listwise: Literal["listmle", "listnet"] = "listmle"
    task_mse_weight: float = 0.0
    pcgrad: bool = False
    batching: Literal["random", "group"] = "random"
    fit_normalization: bool = True
    seed: int = 0
    device: str = "cpu"

    def __post_init__(self) -> None:
        choices = {"schedule": ("cosine", "plateau", "none"), "monitor_mode": ("min", "max"),
                   "rank_loss": ("logistic", "hinge"), "listwise": ("listmle", "listnet"),
                   "batching": ("random", "group")}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"TrainConfig: unknown {name} {getattr(self, name)!r}; choices: "
                                 f"{', '.join(allowed)}")
        if self.epochs < 0 or self.batch_size < 1 or self.lr <= 0 or self.rank_top_weight < 0:
            raise ValueError(f"TrainConfig: epochs={self.epochs}, batch_size={self.batch_size}, lr={self.lr}, "
                             f"rank_top_weight={self.rank_top_weight} must be >= 0, >= 1, > 0, >= 0")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def replace(self, **changes: Any) -> TrainConfig:
        return dataclasses.replace(self, **changes)
