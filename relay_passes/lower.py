"""Lower a Relax IRModule the way TVM does before it compiles or tunes it.

The fused module is the one `ms.relax_integration.extract_tasks` and `tune_relax` see (the passes of
`relax.pipeline.static_shape_tuning_pipeline` up to FuseTIR): every `call_tir` in its `main` is one kernel that TVM
compiles and MetaSchedule tunes. The op-level view stops before fusion, the granularity PerfSeer works at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import tvm
from tvm import relax

from relay_passes.canonicalize import canonical_order
from relay_passes.legalize_cache import LegalizeCache
from relay_passes.shape_fold import shape_fold_constants

FusionLevel = Literal["none", "default"]
FUSION_LEVELS: tuple[str, ...] = ("none", "default")
ConstantFolding = Literal["shape", "tvm"]


@dataclass
class LoweredModule:
    """A lowered module and the Relax ops fused into each of its PrimFuncs.

    Attributes:
        mod: Module whose `main` calls PrimFuncs through `call_tir`.
        op_kinds: PrimFunc name -> the legalized ops inside it, in order (e.g. ["conv2d", "add", "relu"]).
    """

    mod: tvm.IRModule
    op_kinds: dict[str, list[str]]


def op_kind(func_name: str) -> str:
    """The op a legalized PrimFunc implements: its name without TVM's de-duplicating suffix ("add3" -> "add")."""
    return re.sub(r"\d+$", "", func_name) or func_name


def lower(
    mod: tvm.IRModule,
    target: tvm.target.Target,
    *,
    fusion: FusionLevel = "default",
    constant_folding: ConstantFolding = "shape",
    legalize_cache: LegalizeCache | None = None,
) -> LoweredModule:
    """Legalize and (optionally) fuse `mod` with TVM's own passes.

    Args:
        mod: A Relax module with a `main` function and static shapes.
        target: The target; legalization of some ops depends on it.
        fusion: "default" runs TVM's FuseOps + FuseTIR (the kernels TVM compiles); "none" stops after
            legalization, one PrimFunc per Relax op.
        constant_folding: "shape" folds what FoldConstant would, by shape only (fast; the constants become
            zeros, so never compile the result); "tvm" runs TVM's FoldConstant (compiles and runs each fold).
        legalize_cache: Reuse PrimFuncs legalized for identical op calls of earlier modules (same result,
            less time when many similar modules are lowered).
    """
    if fusion not in FUSION_LEVELS:
        raise ValueError(f"unknown fusion level {fusion!r}; choose one of {', '.join(FUSION_LEVELS)}")
    if constant_folding not in ("shape", "tvm"):
        raise ValueError(f"unknown constant folding {constant_folding!r}; choose 'shape' or 'tvm'")
    fold = shape_fold_constants if constant_folding == "shape" else relax.transform.FoldConstant()
    legalize = [
        # Inference folds a batch norm that follows a conv into the conv's weights (torch's ONNX exporter does
        # the same), so both import paths give the same kernels.
        relax.transform.FoldBatchnormToConv2D(),
        fold,
        relax.transform.DecomposeOpsForInference(),
        relax.transform.CanonicalizeBindings(),
        relax.transform.LegalizeOps(legalize_cache.legalize_map() if legalize_cache is not None else None),
        relax.transform.AnnotateTIROpPattern(),
        fold,
    ]
    with target, tvm.transform.PassContext(opt_level=3):
        mod = canonical_order(mod)
        for step in legalize:
            mod = step(mod)
        if fusion == "none":
            mod = relax.transform.DeadCodeElimination()(mod)
            return LoweredModule(mod, {gv.name_hint: [op_kind(gv.name_hint)] for gv in _prim_funcs(mod)})
        grouped = relax.transform.FuseOps()(mod)
        op_kinds = _fused_op_kinds(grouped)
        fused = tvm.transform.Sequential([relax.transform.FuseTIR(), relax.transform.DeadCodeElimination()])(grouped)
    for gv in _prim_funcs(fused):
        op_kinds.setdefault(gv.name_hint, [op_kind(gv.name_hint)])
    return LoweredModule(fused, op_kinds)


def _prim_funcs(mod: tvm.IRModule) -> list[tvm.ir.GlobalVar]:
    return [gv for gv, f in mod.functions.items() if isinstance(f, tvm.tirx.PrimFunc)]


def _fused_op_kinds(grouped: tvm.IRModule) -> dict[str, list[str]]:
    """FuseOps makes one `Primitive` Relax function per group; FuseTIR names the fused PrimFunc after it."""
    kinds: dict[str, list[str]] = {}
    for gv, func in grouped.functions.items():
        if not isinstance(func, relax.Function) or gv.name_hint == "main":
            continue
        calls: list[str] = []
        for block in func.body.blocks:
            for binding in block.bindings:
                value = binding.value
                if isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op) \
                        and value.op.name == "relax.call_tir":
                    calls.append(op_kind(value.args[0].name_hint))
        kinds[gv.name_hint] = calls
    return kinds
