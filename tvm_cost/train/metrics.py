"""Evaluation metrics on numpy arrays: ranking within groups and regression accuracy.

Conventions: `latency` is the measured value (lower is better); `score` is the model's ranking score (higher is
better, e.g. minus the predicted log-latency); `pred` is a predicted latency in the same unit as `true`. `group`
is one id per candidate (e.g. the tuning task); None treats all candidates as one group. Ranking metrics are
computed per group and averaged with equal weight per group.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats


def _groups(group: ArrayLike | None, n: int) -> Iterator[np.ndarray]:
    if group is None:
        yield np.arange(n)
        return
    g = np.asarray(group).reshape(-1)
    if g.shape[0] != n:
        raise ValueError(f"group has {g.shape[0]} entries, expected {n}")
    order = np.argsort(g, kind="stable")
    bounds = np.flatnonzero(np.diff(g[order])) + 1
    yield from np.split(order, bounds)


def _pair(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(a, np.float64).reshape(-1), np.asarray(b, np.float64).reshape(-1)
    if x.shape != y.shape:
        raise ValueError(f"arrays differ in length: {x.shape[0]} vs {y.shape[0]}")
    return x, y


def pairwise_accuracy(latency: ArrayLike, score: ArrayLike, group: ArrayLike | None = None, *,
                      min_ratio: float = 1.0) -> float:
    """Share of same-group pairs with different latencies that `score` orders correctly.

    A pair ``(i, j)`` with ``latency_i < latency_j`` is correct when ``score_i > score_j`` and counts one half
    when the scores tie. Pairs are pooled over all groups (a group of n candidates weighs ~n^2). With `min_ratio`
    r > 1 only pairs with ``latency_j >= r * latency_i`` count: those a tuner gains from ordering, apart from the
    near-ties that measurement noise may order either way. NaN when no pair qualifies.
    """
    if min_ratio < 1.0:
        raise ValueError(f"min_ratio={min_ratio} must be >= 1")
    lat, sc = _pair(latency, score)
    correct, total = 0.0, 0
    for idx in _groups(group, lat.shape[0]):
        la, s = lat[idx], sc[idx]
        for start in range(0, idx.shape[0], 1024):  # row chunks bound memory for large groups
            rows = la[start:start + 1024, None]
            dl = (rows < la[None, :]) & (rows * min_ratio <= la[None, :])
            ds = np.sign(s[start:start + 1024, None] - s[None, :])
            correct += float((dl & (ds > 0)).sum()) + 0.5 * float((dl & (ds == 0)).sum())
            total += int(dl.sum())
    return correct / total if total else float("nan")


def peak_at_k(latency: ArrayLike, score: ArrayLike, group: ArrayLike | None = None, *, k: int = 1) -> float:
    """TenSet/TLP "top-k score": how close the model's k best picks come to the truly best candidate.

    Per group of more than `k` candidates: take the `k` candidates with the highest `score` (ties broken by
    position), and compute ``best true latency in the group / best true latency among the picks``, a value in
    (0, 1] where 1 means the truly fastest candidate is among the picks. Returns the mean over those groups, NaN
    when there is none. Groups of `k` or fewer candidates are skipped: any model scores 1 on them, so counting them
    would only pull every model (random included) towards 1. (The reciprocal, picks' best over true best >= 1, is
    the slowdown a tuner accepts by trusting the model.)
    """
    if k < 1:
        raise ValueError(f"k={k} must be >= 1")
    lat, sc = _pair(latency, score)
    ratios = []
    for idx in _groups(group, lat.shape[0]):
        if idx.shape[0] <= k:
            continue
        picks = idx[np.argsort(-sc[idx], kind="stable")[:k]]
        ratios.append(lat[idx].min() / lat[picks].min())
    return float(np.mean(ratios)) if ratios else float("nan")


def _per_group(fn: Callable[[np.ndarray, np.ndarray], float], true: ArrayLike, pred: ArrayLike,
               group: ArrayLike | None) -> float:
    t, p = _pair(true, pred)
    values = []
    for idx in _groups(group, t.shape[0]):
        if idx.shape[0] < 2 or np.ptp(t[idx]) == 0 or np.ptp(p[idx]) == 0:
            continue  # correlation undefined
        values.append(fn(t[idx], p[idx]))
    return float(np.mean(values)) if values else float("nan")


def kendall_tau(true: ArrayLike, pred: ArrayLike, group: ArrayLike | None = None) -> float:
    """Kendall's tau-b (scipy) between `true` and `pred` (same orientation), averaged over groups.

    Groups where either side is constant are skipped; NaN when none remains.
    """
    return _per_group(lambda a, b: float(stats.kendalltau(a, b).statistic), true, pred, group)


def spearman(true: ArrayLike, pred: ArrayLike, group: ArrayLike | None = None) -> float:
    """Spearman's rank correlation (scipy) between `true` and `pred`, averaged over groups (as `kendall_tau`)."""
    return _per_group(lambda a, b: float(stats.spearmanr(a, b).statistic), true, pred, group)


def mape(true: ArrayLike, pred: ArrayLike) -> float:
    """Mean absolute percentage error ``mean(|pred - true| / true)``, as a fraction (0.05 is 5 %)."""
    t, p = _pair(true, pred)
    return float(np.mean(np.abs(p - t) / t))


def share_within(true: ArrayLike, pred: ArrayLike, *, tol: float = 0.10) -> float:
    """Share of predictions within ``±tol`` relative error: ``mean(|pred - true| / true <= tol)``."""
    t, p = _pair(true, pred)
    return float(np.mean(np.abs(p - t) / t <= tol + 1e-12))


def share_within_factor(true: ArrayLike, pred: ArrayLike, *, factor: float = 2.0) -> float:
    """Share of predictions within a factor of the truth, ``mean(max(pred / true, true / pred) <= factor)``.

    Symmetric in log space, unlike MAPE, which caps an under-prediction at 100 % but not an over-prediction.
    """
    t, p = _pair(true, pred)
    return float(np.mean(np.abs(np.log(p / t)) <= np.log(factor) + 1e-12))

