"""Constant folding by shape only: what FoldConstant would fold, replaced by placeholder tensors of the same shape.

TVM's FoldConstant compiles and runs every call whose inputs are all constants (weight transposes, batch-norm scale
arithmetic ...): 287 LLVM builds and 40 s for one NAS-Bench-201 network here. The operator graph needs only which
calls fold away and the shapes of what they produce; the kernels that remain, and their workload hashes, are the
same because constants reach kernels as arguments, never inlined. Never compile a module folded this way: its
folded constants are uninitialized memory, allocated without a fill or a copy (filling ResNet-50's weights with
zeros was half of this pass's time). (`tvm_cost.e2e` compiles with the real FoldConstant.)
"""

from __future__ import annotations

import tvm
from tvm import relax
from tvm.relax.expr_functor import PyExprMutator, mutator


def _static_tensor(ty: object) -> tuple[list[int], str] | None:
    if isinstance(ty, relax.TensorType) and ty.shape is not None and all(hasattr(d, "value")
                                                                          for d in ty.shape.values):
        return [int(d.value) for d in ty.shape.values], str(ty.dtype)
    return None


def _all_constant(expr: object) -> bool:
    if isinstance(expr, relax.Tuple):
        return all(_all_constant(f) for f in expr.fields)
    # shapes, prim values and attributes-as-arguments are compile-time values too
    return isinstance(expr, (tvm.ir.expr.Constant, tvm.ir.GlobalVar, tvm.ir.Op, relax.ShapeExpr)) or \
        type(expr).__name__ in ("PrimValue", "StringImm", "DataTypeImm")


@mutator
class _ShapeFolder(PyExprMutator):
    def __init__(self, mod: tvm.IRModule) -> None:
        super().__init__(mod)
        self.folded: dict[object, relax.Expr] = {}

    def visit_var_(self, var: relax.Var) -> relax.Expr:
        return self.folded.get(var, var)

    def visit_dataflow_var_(self, var: relax.Var) -> relax.Expr:
        return self.folded.get(var, var)

    def visit_var_binding_(self, binding: relax.VarBinding) -> None:
        value = self.visit_expr(binding.value)
        static = _static_tensor(binding.var.ty)
        if isinstance(value, relax.Call) and static is not None and all(_all_constant(a) for a in value.args):
            shape, dtype = static
            self.folded[binding.var] = relax.const(tvm.runtime.empty(shape, dtype))
            return
        self.builder_.emit_normalized(relax.VarBinding(binding.var, value))


def shape_fold_constants(mod: tvm.IRModule) -> tvm.IRModule:
    """Fold every all-constant call of `main` into a placeholder constant of its static shape (see module
    docstring)."""
    folder = _ShapeFolder(mod)
    out = tvm.IRModule(dict(mod.functions.items()))
    out["main"] = folder.visit_expr(mod["main"])
    return relax.transform.DeadCodeElimination()(out)
