"""The decision-aware tree ranker: its features, its relevance grades, and that it learns a within-task order."""

from __future__ import annotations

import numpy as np

from tvm_cost.features.program_schema import CANDIDATE_SCHEMA, PROGRAM_SCHEMA
from tvm_cost.features.trace_decisions import DECISION_COLUMNS
from tvm_cost.train import pairwise_accuracy
from tvm_cost.tuning.ranker import RELEVANCE_LEVELS, ranker_features, ranker_scores, relevance


def test_relevance_grades_each_group_from_its_own_best():
    latency = np.array([1.0, 2.0, 4.0, 4.0, 8.0])
    group = np.array([0, 0, 1, 1, 1])
    assert relevance(latency, group).tolist() == [RELEVANCE_LEVELS, RELEVANCE_LEVELS // 2, RELEVANCE_LEVELS,
                                                  RELEVANCE_LEVELS, RELEVANCE_LEVELS // 2]


def test_features_are_rows_and_globals_with_the_decisions(tiny_logs):
    from tvm_cost.tuning.offline import load_kernel_dataset

    ds = load_kernel_dataset(tiny_logs)
    f = ranker_features(list(ds))
    assert f.shape == (len(ds), 2 * 164 + len(CANDIDATE_SCHEMA.globals))
    np.testing.assert_array_equal(f[:, 2 * 164:], np.concatenate([d.u.numpy() for d in ds]))
    np.testing.assert_allclose(f[:, :164], np.stack([d.x[:, :164].sum(0).numpy() for d in ds]), rtol=1e-6)
    np.testing.assert_allclose(f[:, 164:2 * 164], np.stack([d.x[:, :164].max(0).values.numpy() for d in ds]))
    raw = np.concatenate([d.raw_decisions.numpy() for d in ds])
    np.testing.assert_array_equal(ranker_features(list(ds), "trace"), np.concatenate([f[:, 2 * 164:], raw], 1))


def synthetic_items(groups: range, per_group: int, rng: np.random.Generator) -> list:
    """SYNTHETIC candidates: random rows and decisions; latency falls with the inner spatial tile, times a task
    scale, with 5 % noise."""
    import torch
    from torch_geometric.data import Data

    inner = len(PROGRAM_SCHEMA.globals) + DECISION_COLUMNS.index("log_last_spatial_inner")
    items = []
    for g in groups:
        scale = rng.uniform(0.1, 10.0)
        for _ in range(per_group):
            u = np.zeros((1, len(CANDIDATE_SCHEMA.globals)), np.float32)
            u[:, len(PROGRAM_SCHEMA.globals):] = rng.uniform(0, 5, (1, len(DECISION_COLUMNS)))
            latency = scale * 2.0 ** -u[0, inner] * rng.uniform(0.95, 1.05)
            items.append(Data(x=torch.rand(3, 180), u=torch.from_numpy(u), group=torch.tensor([g]),
                              latency_ms=float(latency)))
    return items


def test_ranker_orders_unseen_tasks():
    """Trained on 12 SYNTHETIC tasks, the ranker orders 4 others by the decision that sets their times."""
    rng = np.random.default_rng(0)
    train, test = synthetic_items(range(12), 24, rng), synthetic_items(range(12, 16), 24, rng)
    scores = ranker_scores(train, test, seeds=(0,))
    latency, group = np.array([d.latency_ms for d in test]), np.array([int(d.group) for d in test])
    assert pairwise_accuracy(latency, scores, group) >= 0.85
    assert pairwise_accuracy(latency, rng.random(len(test)), group) < 0.6  # what no learning gives
