"""Baselines for end-to-end latency: a linear model on FLOPs and bytes, and gradient-boosted trees on graph-level
aggregates. Each fits log latency and predicts latency in ms."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

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
    """XGBoost regression of log latency on `graph_aggregates` (the strongest non-graph baseline)."""

    PARAMS = {"max_depth": 4, "eta": 0.05, "subsample": 0.8, "colsample_bytree": 0.8, "nthread": 1,
              "objective": "reg:squarederror"}

    def __init__(self, seed: int = 0, rounds: int = 400) -> None:
        self.params = {**self.PARAMS, "seed": seed}
        self.rounds = rounds

    def fit(self, items: Sequence[Any]) -> "BoostedAggregates":
        import xgboost as xgb

        data = xgb.DMatrix(graph_aggregates(items), label=_log_latency(items))
        self.booster = xgb.train(self.params, data, num_boost_round=self.rounds)
        return self

    def predict(self, items: Sequence[Any]) -> np.ndarray:
        import xgboost as xgb

        return np.exp(self.booster.predict(xgb.DMatrix(graph_aggregates(items))))
