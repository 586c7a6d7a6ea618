import math

import numpy as np
import pytest

from tvm_cost.train.metrics import kendall_tau, mape, pairwise_accuracy, peak_at_k, share_within, \
    share_within_factor, spearman


def test_pairwise_accuracy_by_hand():
    # pairs (0,1) and (0,2) right, (1,2) wrong
    assert pairwise_accuracy([1, 2, 3], [3, 1, 2]) == pytest.approx(2 / 3)
    # a tied score counts one half
    assert pairwise_accuracy([1, 2, 3], [1, 1, 0]) == pytest.approx(2.5 / 3)
    # only pairs within a group: group 0 right, group 1 wrong
    assert pairwise_accuracy([1, 2, 1, 2], [1, 0, 0, 1], [0, 0, 1, 1]) == pytest.approx(0.5)
    assert math.isnan(pairwise_accuracy([1, 1], [0, 1]))


def test_pairwise_accuracy_over_pairs_apart_by_a_ratio():
    latency, score = [1.0, 1.05, 2.0], [1, 2, 0]  # (0,1) 5 % apart and wrong; (0,2), (1,2) right
    assert pairwise_accuracy(latency, score) == pytest.approx(2 / 3)
    assert pairwise_accuracy(latency, score, min_ratio=1.1) == pytest.approx(1.0)  # the near-tie left out
    assert pairwise_accuracy(latency, score, min_ratio=1.05) == pytest.approx(2 / 3)  # exactly r apart counts
    assert math.isnan(pairwise_accuracy(latency, score, min_ratio=3.0))
    with pytest.raises(ValueError, match="min_ratio"):
        pairwise_accuracy(latency, score, min_ratio=0.9)


def test_peak_at_k_by_hand():
    latency = [1, 2, 4, 3, 6]
    score = [0, 1, 2, 1, 0]
    group = [0, 0, 0, 1, 1]
    # group 0: top-1 pick has latency 4 (best 1) -> 1/4; group 1: top-1 pick is the best -> 1
    assert peak_at_k(latency, score, group, k=1) == pytest.approx((0.25 + 1) / 2)
    # group 0: picks latencies 4, 2 -> 1/2; group 1 (2 candidates, both picked) is trivial and skipped
    assert peak_at_k(latency, score, group, k=2) == pytest.approx(0.5)
    assert math.isnan(peak_at_k(latency, score, group, k=10))
    # a single-candidate group would score 1 for any model: it does not count
    assert peak_at_k([*latency, 7], [*score, 0], [*group, 2], k=1) == pytest.approx((0.25 + 1) / 2)
    with pytest.raises(ValueError):
        peak_at_k(latency, score, group, k=0)


def test_correlations_by_hand():
    assert kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)  # (2 concordant - 1 discordant) / 3
    assert spearman([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)  # 1 - 6 * 2 / (3 * 8)
    # per group, then averaged: +1 and -1
    assert kendall_tau([1, 2, 1, 2], [1, 2, 2, 1], [0, 0, 1, 1]) == pytest.approx(0.0)
    assert math.isnan(spearman([1, 1], [1, 2]))


def test_regression_metrics_by_hand():
    true, pred = np.array([100.0, 200.0]), np.array([110.0, 150.0])
    assert mape(true, pred) == pytest.approx((0.1 + 0.25) / 2)
    assert share_within(true, pred) == 0.5
    assert share_within(true, pred, tol=0.25) == 1.0
    with pytest.raises(ValueError, match="differ"):
        mape([1.0], [1.0, 2.0])
    # 1.9x over, 2.02x under, 2.5x under: only the first within 2x; all within 3x
    assert share_within_factor([100.0, 200.0, 100.0], [190.0, 99.0, 40.0]) == pytest.approx(1 / 3)
    assert share_within_factor([100.0, 200.0, 100.0], [190.0, 99.0, 40.0], factor=3.0) == 1.0
