"""`EnsembleModel`: a deep ensemble (Lakshminarayanan et al. 2017) of graph cost models for uncertainty."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import torch
from torch import Tensor, nn

from tvm_cost.models.base import GraphCostModel
from tvm_cost.models.config import ModelConfig


class EnsembleModel(nn.Module):
    """`size` members of one kind, member ``i`` initialized from ``config.seed + i``.

    Simple and Scalable Predictive Uncertainty Estimation using Deep Ensembles, Lakshminarayanan et al. 2017,
    https://arxiv.org/abs/1612.01474 . ``forward`` is the members' mean, so the ensemble trains with the same loop
    and losses as one model (the members see the same batches; their different initializations and dropout
    masks keep them apart). ``predict`` adds the spread between members to their MC-dropout spread.

    Args:
        config: Architecture of every member (each gets its own seed).
        kind: Member kind, "seernet" or "gcn".
        size: Number of members (>= 2).

    Shapes:
        forward(data) -> [G, len(config.heads)] natural-log metrics.
    """

    def __init__(self, config: ModelConfig, *, kind: str = "seernet", size: int = 5) -> None:
        super().__init__()
        from tvm_cost.models import MODEL_KINDS  # late: the registry imports this module

        if kind not in MODEL_KINDS:
            raise ValueError(f"unknown ensemble member kind {kind!r}; choices: {', '.join(MODEL_KINDS)}")
        if size < 2:
            raise ValueError(f"ensemble size {size} must be >= 2")
        self.config, self.kind = config, kind
        self.members = nn.ModuleList(MODEL_KINDS[kind](config.replace(seed=config.seed + i)) for i in range(size))

    def _first(self) -> GraphCostModel:
        return self.members[0]  # type: ignore[return-value]

    def fit_normalization(self, graphs: Iterable[Any]) -> EnsembleModel:
        """Compute the stats once and give them to every member; returns self."""
        self._first().fit_normalization(graphs)
        self.set_normalization(self._first().normalization())
        return self

    def _all(self) -> list[GraphCostModel]:
        return list(self.members)  # type: ignore[arg-type]

    def set_normalization(self, stats: Mapping[str, Tensor]) -> None:
        for m in self._all():
            m.set_normalization(stats)

    def normalization(self) -> dict[str, Tensor]:
        return self._first().normalization()

    def forward(self, data: Any) -> Tensor:
        """Mean of the members' log-metric predictions ([G, heads])."""
        return torch.stack([m(data) for m in self.members]).mean(0)

    def head_index(self, head: str | None = None) -> int:
        return self._first().head_index(head)

    def score(self, data: Any, *, head: str | None = None) -> Tensor:
        """Ranking score, higher is better: minus the mean predicted log-latency ([G])."""
        return -self(data)[:, self.head_index(head)]

    @torch.no_grad()
    def predict(self, data: Any, *, samples: int = 1, seed: int = 0) -> tuple[Tensor, Tensor]:
        """Mean and std over members (law of total variance over each member's MC-dropout samples).

        Shapes:
            Returns ``(mean, std)``, each ``[num_graphs, len(config.heads)]``.
        """
        preds = [m.predict(data, samples=samples, seed=seed + i) for i, m in enumerate(self._all())]
        means = torch.stack([p[0] for p in preds])
        variances = torch.stack([p[1] for p in preds]) ** 2
        mean = means.mean(0)
        return mean, (means.var(0, unbiased=False) + variances.mean(0)).sqrt()

    def init_args(self) -> dict[str, Any]:
        return {"kind": self.kind, "size": len(self.members)}
