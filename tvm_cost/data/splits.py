"""Train/validation/test splits: random, or holding out whole groups (tasks, model families, targets).

Held-out groups are what the cost-model claims are about: a kernel model is judged on tasks, and an end-to-end model
on model families, that training never saw.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Split:
    """Index arrays into a dataset."""

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray

    def __post_init__(self) -> None:
        seen = np.concatenate([self.train, self.val, self.test])
        if len(np.unique(seen)) != len(seen):
            raise ValueError("split parts overlap")


def random_split(n: int, *, val: float = 0.1, test: float = 0.2, seed: int = 0) -> Split:
    """Shuffle `n` indices with a seeded generator and cut them by fractions."""
    order = np.random.default_rng(seed).permutation(n)
    n_test, n_val = int(round(n * test)), int(round(n * val))
    return Split(np.sort(order[n_test + n_val:]), np.sort(order[n_test:n_test + n_val]), np.sort(order[:n_test]))


def group_split(
    groups: Sequence[str],
    *,
    test_groups: Sequence[str] | None = None,
    val: float = 0.1,
    test: float = 0.2,
    seed: int = 0,
) -> Split:
    """Hold out whole groups: `test_groups` when given, else a seeded random `test` fraction of the groups.

    Validation is a `val` fraction of the remaining groups (never of the test groups), so early stopping does not
    peek at held-out groups either.
    """
    keys = np.asarray(groups)
    names = sorted(set(groups))
    rng = np.random.default_rng(seed)
    if test_groups is None:
        shuffled = list(rng.permutation(names))
        test_set = set(shuffled[: max(1, int(round(len(names) * test)))])
    else:
        unknown = set(test_groups) - set(names)
        if unknown:
            raise ValueError(f"unknown test groups {sorted(unknown)}; groups are {names}")
        test_set = set(test_groups)
    rest = [g for g in names if g not in test_set]
    rest = list(rng.permutation(rest))
    val_set = set(rest[: int(round(len(rest) * val))]) if len(rest) > 1 else set()
    idx = np.arange(len(keys))
    in_test = np.isin(keys, list(test_set))
    in_val = np.isin(keys, list(val_set))
    return Split(idx[~in_test & ~in_val], idx[in_val], idx[in_test])
