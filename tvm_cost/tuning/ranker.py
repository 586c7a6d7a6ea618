"""A tree ranker over a candidate's PerStoreFeature rows and its trace's sampling decisions.

XGBoost ``rank:pairwise`` within tasks on the rows summed and maxed over the candidate's stores, the task's
globals, and `trace_decisions.decision_features`. TVM's `XGBModel` sees only the rows (and regresses a
normalized throughput); with the decisions this ranker is 4-6 points of pairwise accuracy and 14-17 of peak@1
ahead of it on held-out families, and its rank mean with the GNN ranks best of all (docs/kernel_model.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tvm_cost.features.schema import NUM_STORE_FEATURES

RELEVANCE_LEVELS = 30  # relevance of a candidate: floor(levels x its task's best latency / its latency)
BOOSTER_PARAMS = {"objective": "rank:pairwise", "eta": 0.1, "max_depth": 6, "min_child_weight": 2,
                  "subsample": 0.8, "colsample_bytree": 0.8}
ROUNDS = 300


def ranker_features(items: Sequence[Any]) -> np.ndarray:
    """Per item: its rows summed and maxed over stores, its globals `u`, its ``decisions``.

    Shapes:
        returns: [len(items), 2 * 164 + len(u) + len(DECISION_COLUMNS)] float32.
    """
    rows = []
    for d in items:
        x = d.x[:, :NUM_STORE_FEATURES].numpy()
        rows.append(np.concatenate([x.sum(0), x.max(0), d.u[0].numpy(), d.decisions[0].numpy()]))
    return np.stack(rows).astype(np.float32)


def relevance(latency: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Graded relevance within each group, 0 (slow) to `RELEVANCE_LEVELS` (the group's fastest)."""
    out = np.zeros(len(latency))
    for g in np.unique(group):
        rows = group == g
        out[rows] = np.floor(RELEVANCE_LEVELS * latency[rows].min() / latency[rows])
    return out


def booster_scores(fit_features: np.ndarray, fit_latency: np.ndarray, fit_group: np.ndarray,
                   score_features: np.ndarray, *, seeds: Sequence[int]) -> np.ndarray:
    """Scores (higher is faster) of the `score_features` rows by boosters trained on the fit rows (ranked within
    `fit_group`), averaged over `seeds`."""
    import xgboost as xgb

    order = np.argsort(fit_group, kind="stable")  # XGBoost wants each group's rows contiguous
    train = xgb.DMatrix(fit_features[order], label=relevance(fit_latency[order], fit_group[order]))
    train.set_group(np.unique(fit_group[order], return_counts=True)[1])
    test = xgb.DMatrix(score_features)
    return np.mean([xgb.train({**BOOSTER_PARAMS, "seed": seed}, train, ROUNDS).predict(test) for seed in seeds],
                   axis=0)


def ranker_scores(train_items: Sequence[Any], test_items: Sequence[Any], *, seeds: Sequence[int] = (0, 1, 2)
                  ) -> np.ndarray:
    """Scores (higher is faster) of `test_items` by rankers trained on `train_items`, averaged over `seeds`.

    Items need ``x``, ``u``, ``decisions``, ``group`` (tasks as ranking groups) and ``latency_ms``, as
    `KernelDataset` gives them.
    """
    return booster_scores(ranker_features(train_items), np.array([d.latency_ms for d in train_items]),
                          np.array([int(d.group) for d in train_items]), ranker_features(test_items), seeds=seeds)
