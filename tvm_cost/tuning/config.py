"""`GNNCostModelConfig`: how `GNNCostModel` scores candidates and fine-tunes itself during a tune."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True)
class GNNCostModelConfig:
    """Settings of `GNNCostModel` (saved with it).

    Args:
        model_kind, hidden, layers, dropout, ensemble: Architecture of the model built when no checkpoint is
            loaded (`tvm_cost.models.build_model`; ``ensemble > 1`` gives a deep ensemble).
        seed: Seed of the initial weights, of dropout while fine-tuning and of MC-dropout sampling.
        predict_batch: Graphs per forward pass in `predict`.
        temperature: Scores are ``exp((min(pred) - pred) / temperature)`` over a call's predicted log-latencies.
        exploration: ``kappa`` of an optimistic score on ``mean - kappa * std`` (0: one deterministic pass).
        mc_samples: Forward passes for `predict_with_uncertainty` (and for exploration).
        update_steps: Gradient steps per `update` call (0 disables online fine-tuning). 2 steps at lr 2e-3 rank a
            replayed tune's unmeasured candidates within 0.5 points of 8 at 5e-4 (the default until run
            twenty-seven, docs/kernel_model.md), at a quarter of the fine-tuning time.
        update_batch: Candidates per step, the newest results first, the rest drawn from the task's buffer.
        lr, weight_decay, grad_clip: AdamW settings of the fine-tuning.
        rank_weight, mse_weight: Weights of the pairwise ranking loss within the task and of the log-space MSE.
        tie_tol: Relative latency gap below which two candidates are not ranked (measurement noise).
        rank_top_weight: `pairwise_ranking_loss`'s `top_weight`: pairs weighted by (task best / faster latency) to
            this power, so the order among the fastest measured counts most (0: all pairs alike).
        buffer_size: Measured candidates kept per task (oldest dropped first).
        num_threads: Torch intra-op threads inside predict/update (restored after); None leaves torch's setting.
        fallback: On any exception in predict/update, switch to an internal `XGBModel` instead of failing.
    """

    model_kind: Literal["seernet", "gcn"] = "seernet"
    hidden: int = 64
    layers: int = 2
    dropout: float = 0.1
    ensemble: int = 1
    seed: int = 0
    predict_batch: int = 512
    temperature: float = 1.0
    exploration: float = 0.0
    mc_samples: int = 8
    update_steps: int = 2
    update_batch: int = 64
    lr: float = 2e-3
    weight_decay: float = 1e-4
    grad_clip: float = 1.0
    rank_weight: float = 1.0
    mse_weight: float = 0.1
    tie_tol: float = 0.02
    rank_top_weight: float = 0.0
    buffer_size: int = 512
    num_threads: int | None = None
    fallback: bool = True

    def __post_init__(self) -> None:
        if self.temperature <= 0 or self.exploration < 0 or self.mc_samples < 1:
            raise ValueError(f"GNNCostModelConfig: temperature={self.temperature} > 0, exploration="
                             f"{self.exploration} >= 0, mc_samples={self.mc_samples} >= 1 required")
        if min(self.update_steps, self.rank_weight, self.mse_weight, self.rank_top_weight) < 0 \
                or self.update_batch < 1 or self.buffer_size < 1 or self.predict_batch < 1:
            raise ValueError("GNNCostModelConfig: update_steps, rank_weight, mse_weight, rank_top_weight >= 0; "
                             "update_batch, buffer_size, predict_batch >= 1 required")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GNNCostModelConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"GNNCostModelConfig: unknown fields {unknown}")
        return cls(**data)

    def replace(self, **changes: Any) -> GNNCostModelConfig:
        return dataclasses.replace(self, **changes)
