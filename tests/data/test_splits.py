"""Splits never leak a held-out group into training."""

from __future__ import annotations

import numpy as np
import pytest

from tvm_cost.data.splits import group_split, random_split


def test_random_split_partitions_and_is_seeded():
    s = random_split(100, val=0.1, test=0.2, seed=3)
    assert (len(s.train), len(s.val), len(s.test)) == (70, 10, 20)
    assert sorted(np.concatenate([s.train, s.val, s.test]).tolist()) == list(range(100))
    assert np.array_equal(random_split(100, seed=3).test, s.test)
    assert not np.array_equal(random_split(100, seed=4).test, s.test)


def test_group_split_holds_out_whole_groups():
    groups = ["resnet"] * 5 + ["bert"] * 4 + ["gpt"] * 3 + ["vgg"] * 2 + ["mlp"] * 6
    s = group_split(groups, test_groups=["bert", "gpt"], val=0.34, seed=0)
    g = np.asarray(groups)
    assert set(g[s.test]) == {"bert", "gpt"}
    assert not set(g[s.train]) & {"bert", "gpt"} and not set(g[s.val]) & {"bert", "gpt"}
    assert not set(g[s.train]) & set(g[s.val])
    assert len(s.train) + len(s.val) + len(s.test) == len(groups)


def test_unknown_test_group_is_refused():
    with pytest.raises(ValueError, match="unknown test groups"):
        group_split(["a", "b"], test_groups=["c"])
