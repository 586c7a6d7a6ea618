"""Lowering with TVM's passes: kernels and the ops inside them."""

from __future__ import annotations

import pytest
import tvm

from relay_passes.lower import lower, op_kind


@pytest.fixture(scope="module")
def target():
    return tvm.target.Target({"kind": "llvm", "num-cores": 2})


def test_op_kind_strips_dedup_suffix():
    assert op_kind("add3") == "add" and op_kind("conv2d") == "conv2d" and op_kind("max_pool2d") == "max_pool2d"


def test_fused_kernels_list_their_ops(tiny_mod, target):
    lowered = lower(tiny_mod, target)
    kinds = lowered.op_kinds
    convs = [ops for ops in kinds.values() if ops and ops[0] == "conv2d"]
    assert len(convs) == 2
    # the residual add and relu fuse into the second conv; batch norm was folded into the first conv's weights
    assert any(ops[-1] == "relu" and ops.count("add") >= 2 for ops in convs)
    assert not any(op in ("batch_norm", "subtract", "divide") for ops in kinds.values() for op in ops)


def test_op_level_has_one_op_per_kernel(tiny_mod, target):
    fused = lower(tiny_mod, target)
    flat = lower(tiny_mod, target, fusion="none")
    assert all(len(ops) == 1 for ops in flat.op_kinds.values())
    assert sum(len(v) for v in fused.op_kinds.values()) >= len(flat.op_kinds)


def test_unknown_fusion_level_is_refused(tiny_mod, target) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match="unknown fusion level"):
        lower(tiny_mod, target, fusion="aggressive")  # type: ignore[arg-type]
