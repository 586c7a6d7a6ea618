"""`train`: a small, generic training loop for graph cost models (AdamW, schedule, early stopping, DDP)."""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch_geometric.loader import DataLoader

from tvm_cost.models import CostModel
from tvm_cost.models.seeding import isolated_rng
from tvm_cost.train import metrics
from tvm_cost.train.config import TrainConfig
from tvm_cost.train.objective import TaskLoss
from tvm_cost.train.pcgrad import PCGrad
from tvm_cost.train.sampling import make_loader

logger = logging.getLogger(__name__)

LossFn = Callable[[Tensor, Any], dict[str, Tensor]]
"""``(pred [G, heads], batch) -> {term name: weighted scalar}``; the total loss is the sum of the terms."""


@dataclass
class History:
    """Per-epoch records of a `train` run.

    Attributes:
        records: One dict per epoch: "epoch", "lr", "train_loss", and with a validation set "val_loss", one
            "val_<term>" per loss term, "val_rmse_log_<head>", "val_mape_<head>", and with groups
            "val_pairwise_acc", "val_peak@1", "val_peak@5", "val_kendall".
        best_epoch: Epoch of the best monitored value (None if no epoch ran).
        best_value: That value.
        stopped_early: Whether early stopping ended the run.
    """

    records: list[dict[str, float]] = field(default_factory=list)
    best_epoch: int | None = None
    best_value: float | None = None
    stopped_early: bool = False

    def column(self, name: str) -> list[float]:
        """One column over epochs, e.g. ``history.column("val_loss")``."""
        return [r[name] for r in self.records]


def _dist() -> tuple[bool, int, int]:
    if dist.is_available() and dist.is_initialized():
        return True, dist.get_rank(), dist.get_world_size()
    return False, 0, 1


@torch.no_grad()
def evaluate(model: CostModel, dataset: Sequence[Any], *, config: TrainConfig, loss_fn: LossFn | None = None,
             prefix: str = "val_") -> dict[str, float]:
    """Loss terms and metrics of `model` on `dataset`, in eval mode (see `History.records` for the keys)."""
    loss_fn = loss_fn or TaskLoss(config, model.config.heads)
    was_training = model.training
    model.eval()
    preds: list[Tensor] = []
    ys: list[Tensor] = []
    groups: list[Tensor | None] = []
    sums: dict[str, float] = {}
    count = 0
    try:
        loader = DataLoader(dataset, batch_size=config.batch_size, shuffle=False,
                            generator=torch.Generator().manual_seed(0))  # else iterating draws a global seed
        for batch in loader:
            batch = batch.to(config.device)
            pred = model(batch)
            n = int(batch.num_graphs)
            for name, value in loss_fn(pred, batch).items():
                sums[name] = sums.get(name, 0.0) + float(value) * n
            count += n
            preds.append(pred.cpu())
            ys.append(batch.y.reshape(pred.shape).cpu())
            group = getattr(batch, "group", None)
            groups.append(None if group is None else group.reshape(-1).cpu())
    finally:
        model.train(was_training)
    out = {f"{prefix}{name}": s / max(count, 1) for name, s in sums.items()}
    out[f"{prefix}loss"] = sum(out.values()) if out else float("nan")
    if not preds:
        return out
    pred, y = torch.cat(preds).double().numpy(), torch.cat(ys).double().numpy()
    for i, head in enumerate(model.config.heads):
        ok = np.isfinite(y[:, i]) & (y[:, i] > 0)
        if ok.any():
            out[f"{prefix}rmse_log_{head}"] = float(np.sqrt(np.mean((pred[ok, i] - np.log(y[ok, i])) ** 2)))
            out[f"{prefix}mape_{head}"] = metrics.mape(y[ok, i], np.exp(pred[ok, i]))
    if all(g is not None for g in groups):
        i = model.head_index()
        group, lat, score = torch.cat([g for g in groups if g is not None]).numpy(), y[:, i], -pred[:, i]
        out[f"{prefix}pairwise_acc"] = metrics.pairwise_accuracy(lat, score, group)
        out[f"{prefix}peak@1"] = metrics.peak_at_k(lat, score, group, k=1)
        out[f"{prefix}peak@5"] = metrics.peak_at_k(lat, score, group, k=5)
        out[f"{prefix}kendall"] = metrics.kendall_tau(lat, -score, group)
    return out


def _scheduler(optimizer: torch.optim.Optimizer, config: TrainConfig) -> Any:
    if config.schedule == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=max(config.epochs, 1))
    if config.schedule == "plateau":
        return torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode=config.monitor_mode,
                                                          factor=config.plateau_factor,
                                                          patience=config.plateau_patience)
    return None


def train(model: CostModel, train_set: Sequence[Any], val_set: Sequence[Any] | None = None, *,
          config: TrainConfig = TrainConfig(), loss_fn: LossFn | None = None,
          callback: Callable[[dict[str, float]], None] | None = None) -> History:
    """Train `model` in place on a sequence of PyG `Data` (a list or a PyG dataset); return the history.

    Each graph carries `y` ``[1, heads]`` (measured metrics, natural units) and, for ranking terms, metrics and
    group batching, `group` ``[1]`` (int64). Shuffling, dropout and PCGrad draw from generators seeded by
    `config.seed`; torch's global RNG state is left as it was.

    If `torch.distributed` is initialized (e.g. by ``torchrun``; gloo on CPU), the model is wrapped in
    `DistributedDataParallel`, each rank trains on its shard of the batches, and every rank evaluates the whole
    validation set; rank 0's monitored value drives the schedule and early stopping on all ranks, so all ranks
    stop together with identical weights.

    Args:
        model: A `GraphCostModel` or `EnsembleModel` (anything with ``config.heads``, ``head_index`` and, when
            `config.fit_normalization`, ``fit_normalization``).
        train_set, val_set: The data; without `val_set`, "train_loss" is monitored.
        config: Training settings.
        loss_fn: Objective returning named terms (default `TaskLoss`).
        callback: Called with each epoch's record (on every rank; the record has a "rank" key).

    Returns:
        The `History`; the model ends with the best epoch's weights if `config.restore_best`.
    """
    distributed, rank, world = _dist()
    device = torch.device(config.device)
    model.to(device)
    if config.fit_normalization:
        model.fit_normalization(train_set)
    ddp = nn.parallel.DistributedDataParallel(model) if distributed else None
    net: nn.Module = model if ddp is None else ddp
    loss_fn = loss_fn or TaskLoss(config, model.config.heads)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    pcgrad = PCGrad(optimizer, generator=torch.Generator().manual_seed(config.seed + 1)) if config.pcgrad else None
    scheduler = _scheduler(optimizer, config)
    loader, sampler = make_loader(train_set, batch_size=config.batch_size, batching=config.batching,
                                  seed=config.seed, num_replicas=world, rank=rank)
    seeds = torch.Generator().manual_seed(config.seed + 2)
    monitor = config.monitor if val_set is not None else "train_loss"
    sign = 1.0 if config.monitor_mode == "min" else -1.0
    history, best_state, bad = History(), None, 0

    for epoch in range(config.epochs):
        sampler.set_epoch(epoch)
        net.train()
        total = torch.zeros(2, dtype=torch.float64)
        dropout_seed = int(torch.randint(2**31 - 1, (1,), generator=seeds)) + rank
        with isolated_rng(dropout_seed, device):
            for batch in loader:
                batch = batch.to(device)
                # PCGrad takes task gradients itself (and averages them over ranks): skip DDP's reducer
                sync = ddp.no_sync() if (pcgrad is not None and ddp is not None) else nullcontext()
                with sync:
                    terms = loss_fn(net(batch), batch)
                loss = torch.stack(list(terms.values())).sum()
                if pcgrad is not None:
                    pcgrad.zero_grad()
                    pcgrad.backward(list(terms.values()))
                else:
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                if config.grad_clip is not None:
                    nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
                optimizer.step()
                n = int(batch.num_graphs)
                total += torch.tensor([float(loss.detach()) * n, n], dtype=torch.float64)
        if distributed:
            dist.all_reduce(total)
        record: dict[str, float] = {"epoch": epoch, "rank": rank, "lr": optimizer.param_groups[0]["lr"],
                                    "train_loss": float(total[0] / total[1].clamp(min=1))}
        if val_set is not None:
            record.update(evaluate(model, val_set, config=config, loss_fn=loss_fn))
        if monitor not in record:
            raise ValueError(f"monitor {monitor!r} is not in the epoch record: {', '.join(sorted(record))}")
        value = torch.tensor([record[monitor]], dtype=torch.float64)
        if distributed:
            dist.broadcast(value, src=0)  # one decision for all ranks
        value_f = float(value)
        if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
            scheduler.step(value_f)
        elif scheduler is not None:
            scheduler.step()
        improved = math.isfinite(value_f) and (
            history.best_value is None or sign * (history.best_value - value_f) > config.min_delta)
        if improved:
            history.best_epoch, history.best_value, bad = epoch, value_f, 0
            if config.restore_best:
                best_state = copy.deepcopy(model.state_dict())
        else:
            bad += 1
        history.records.append(record)
        logger.debug("epoch %d: %s", epoch, record)
        if callback is not None:
            callback(record)
        if config.patience is not None and bad >= config.patience:
            history.stopped_early = True
            break
    if best_state is not None:
        model.load_state_dict(best_state)
    return history
