"""Baselines for end-to-end latency: a linear model on FLOPs and bytes, and gradient-boosted trees on graph-level
aggregates. Each fits log latency and predicts latency in ms."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tvm_cost.estimation.work import graph_work
from tvm_cost.features.schema import NODE_STATIC, SCHEMA

_U = {name: i for i, name in enumerate(SCHEMA.globals)}


def _log_latency(items: Sequence[Any]) -> np.ndarray:
    return np.log(np.array([d.latency_ms for d in items]))


class LinearFlopsBytes:
    """log latency = a + b log FLOPs + c log bytes (least squares): a roofline-style baseline.

    Args:
        hardware: Also regress on the target's log peak FLOP/s and log memory bandwidth, so one fit can cover
            (and extrapolate to) several devices.
    """

    def __init__(self, *, hardware: bool = False) -> None:
        self.columns = ["log_total_flops", "log_total_bytes"]
        if hardware:
            self.columns += ["log_hw_peak_gflops", "log_hw_mem_bandwidth_gbs"]

    def _design(self, items: Sequence[Any]) -> np.ndarray:
        u = np.stack([d.u[0].numpy() for d in items])
        return np.column_stack([np.ones(len(items)), *(u[:, _U[c]] for c in self.columns)])

    def fit(self, items: Sequence[Any]) -> "LinearFlopsBytes":
        self.coef_, *_ = np.linalg.lstsq(self._design(items), _log_latency(items), rcond=None)
        return self

    def predict(self, items: Sequence[Any]) -> np.ndarray:
        return np.exp(self._design(items) @ self.coef_)


def graph_aggregates(items: Sequence[Any]) -> np.ndarray:
    """Per graph: globals, then sum, mean and max over nodes of the static node columns (not per-store ones)."""
    n_static = len(NODE_STATIC)
    rows = []
    for d in items:
        x = d.x[:, :n_static].numpy()
        rows.append(np.concatenate([d.u[0].numpy(), x.sum(0), x.mean(0), x.max(0)]))
    return np.stack(rows)


class BoostedAggregates:
    """XGBoost regression of log latency on `graph_aggregates` (the strongest non-graph baseline).

    Args:
        seed: XGBoost's seed.
        rounds: Boosting rounds.
        per_work: Learn log latency per unit of work (the graph's ln(FLOPs + bytes) as base margin,
            `tvm_cost.estimation.work`), so graphs larger than any seen are not capped at the slowest one.
    """

    PARAMS = {"max_depth": 4, "eta": 0.05, "subsample": 0.8, "colsample_bytree": 0.8, "nthread": 1,
              "objective": "reg:squarederror"}

    def __init__(self, seed: int = 0, rounds: int = 400, *, per_work: bool = False) -> None:
        self.params = {**self.PARAMS, "seed": seed}
        self.rounds = rounds
        self.per_work = per_work

    def _matrix(self, items: Sequence[Any], label: np.ndarray | None = None) -> Any:
        import xgboost as xgb

        margin = np.log(graph_work(items)) if self.per_work else None
        return xgb.DMatrix(graph_aggregates(items), label=label, base_margin=margin)

    def fit(self, items: Sequence[Any]) -> "BoostedAggregates":
        import xgboost as xgb

        self.booster = xgb.train(self.params, self._matrix(items, _log_latency(items)), num_boost_round=self.rounds)
        return self

    def predict(self, items: Sequence[Any]) -> np.ndarray:
        return np.exp(self.booster.predict(self._matrix(items)))
