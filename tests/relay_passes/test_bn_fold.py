"""Batch-norm folding by shape gives exactly the kernels of TVM's FoldBatchnormToConv2D + constant folding."""

from __future__ import annotations

import pytest
import torch
import tvm
import tvm_ffi
from tvm import relax

from relay_passes.bn_fold import fold_batchnorm_by_shape
from relay_passes.canonicalize import canonical_order
from relay_passes.lower import lower
from relay_passes.shape_fold import shape_fold_constants
from tvm_cost.importer import import_model


def _kernels(mod: tvm.IRModule) -> list[tuple[str, int]]:
    return sorted((gv.name_hint, tvm_ffi.structural_hash(f)) for gv, f in mod.functions.items()
                  if isinstance(f, tvm.tirx.PrimFunc))


def _tvm_path(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    """What `lower` did before: TVM's pattern-based pass, then shape folding."""
    with target, tvm.transform.PassContext(opt_level=3):
        mod = shape_fold_constants(relax.transform.FoldBatchnormToConv2D()(canonical_order(mod)))
        return relax.transform.LegalizeOps()(relax.transform.DecomposeOpsForInference()(mod))


@pytest.mark.parametrize("spec", ["zoo:resnet18,width=0.25,resolution=32", "zoo:mobilenet_v2,width=0.5,depth=0.5,"
                                  "resolution=32", "zoo:densenet,width=0.25,depth=41,resolution=32"])
def test_same_kernels_as_tvms_pass(spec):
    target = tvm.target.Target({"kind": "llvm", "num-cores": 1})
    mod = import_model(spec).mod
    with target, tvm.transform.PassContext(opt_level=3):
        fast = relax.transform.LegalizeOps()(relax.transform.DecomposeOpsForInference()(
            shape_fold_constants(fold_batchnorm_by_shape(canonical_order(mod)))))
    assert _kernels(fast) == _kernels(_tvm_path(mod, target))
    assert "batch_norm" not in str(fast["main"])
    # and the fused kernels `lower` makes keep TVM's names
    assert not any("batch_norm" in k for k in lower(mod, target).op_kinds)


def test_batch_norm_without_a_conv_is_left_alone():
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Unflatten(1, (6, 1)), torch.nn.BatchNorm1d(6)).eval()
    mod = import_model(model, example_inputs=(torch.randn(2, 4),)).mod
    with tvm.target.Target("llvm"):
        assert "batch_norm" in str(fold_batchnorm_by_shape(mod)["main"])
