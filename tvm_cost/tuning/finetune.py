"""Online fine-tuning of a graph cost model on one task's measured candidates (what `GNNCostModel.update` runs)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from tvm_cost.features.program_graph import to_pyg_batch
from tvm_cost.models.seeding import isolated_rng
from tvm_cost.train.losses import log_mse_loss, pairwise_ranking_loss
from tvm_cost.tuning.config import GNNCostModelConfig


def fit_input_normalization(model: Any, items: Sequence[Any]) -> None:
    """Standardize inputs from `items` (PyG `Data` with ``y``) and centre the log-latency; keep ``y_std`` at 1.

    For a model built untrained: a handful of measured candidates of one task gives usable input statistics, but
    their log-latencies often spread by a few percent only, and dividing by that std would flatten the model's
    initial predictions (and scores); predicting in plain log units keeps their spread.
    """
    from tvm_cost.models.base import config_feature_stats

    stats = config_feature_stats(model.config, items, drop_constant=False)  # later tasks may vary them
    stats["y_std"] = torch.ones_like(stats["y_std"])
    model.set_normalization(stats)


def finetune_optimizer(model: nn.Module, config: GNNCostModelConfig) -> torch.optim.Optimizer:
    """The AdamW of online fine-tuning: one fused kernel, not one update per tensor (it runs in every `update`)."""
    return torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay, fused=True)


def _batch_indices(n: int, num_new: int, batch: int, gen: torch.Generator) -> np.ndarray:
    """All of a small buffer; else the newest (up to half a batch) plus a random draw of the older ones."""
    if n <= batch:
        return np.arange(n)
    newest = np.arange(n - min(num_new, batch // 2), n)
    older = n - len(newest)
    pick = torch.randperm(older, generator=gen)[:batch - len(newest)].numpy()
    return np.concatenate([np.sort(pick), newest])


def finetune_steps(model: nn.Module, optimizer: torch.optim.Optimizer, graphs: Sequence[dict[str, np.ndarray]],
                   latency_ms: np.ndarray, *, num_new: int, config: GNNCostModelConfig, seed: int) -> list[float]:
    """`config.update_steps` AdamW steps of ``rank_weight * pairwise ranking + mse_weight * log-MSE`` on one task.

    The ranking loss (RankNet, within the task; pairs closer than `config.tie_tol` count as ties; weighted toward
    the fastest by `config.rank_top_weight`) fixes the order evolutionary search acts on; the small MSE keeps
    predictions on the measured scale. Dropout and batch draws are seeded by `seed`; the model ends in eval mode.

    Shapes:
        graphs: G program graphs; latency_ms: [G] -> one loss per step.
    """
    c = config
    if len(graphs) == 0 or c.update_steps == 0:
        return []
    gen = torch.Generator().manual_seed(seed)
    head = model.head_index()  # type: ignore[operator]
    losses: list[float] = []
    model.train()
    try:
        with isolated_rng(seed):
            for _ in range(c.update_steps):
                idx = _batch_indices(len(graphs), num_new, c.update_batch, gen)
                batch = to_pyg_batch([graphs[i] for i in idx])
                lat = torch.as_tensor(latency_ms[idx], dtype=torch.float32)
                pred = model(batch)[:, head]
                group = torch.zeros(len(idx), dtype=torch.long)
                rank = pairwise_ranking_loss(-pred, lat, group, tie_tol=c.tie_tol, top_weight=c.rank_top_weight)
                loss = c.rank_weight * rank + c.mse_weight * log_mse_loss(pred, lat)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), c.grad_clip, foreach=True)
                optimizer.step()
                losses.append(float(loss.detach()))
    finally:
        model.eval()
    return losses
