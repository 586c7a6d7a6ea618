"""Shared checks of lowered Relax modules."""

from __future__ import annotations

import tvm
from tvm import relax


def call_tir_count(mod: tvm.IRModule) -> int:
    """Number of `call_tir` bindings in `main`: the kernels the module runs."""
    call_tir = tvm.ir.Op.get("relax.call_tir")
    return sum(1 for block in mod["main"].body.blocks for b in block.bindings
               if isinstance(b.value, relax.Call) and b.value.op.same_as(call_tir))
