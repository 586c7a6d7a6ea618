"""Batch-norm folding into the preceding conv2d, by shape only: TVM's FoldBatchnormToConv2D followed by constant
folding, in one walk over the bindings.

TVM's pass matches ``conv2d(x, const) -> batch_norm(., 4 consts) -> [0]`` with its pattern language and rewrites
it to ``add(conv2d(x, w * scale), reshape(bias, [1, C, 1, 1]))``; the weight and bias arithmetic then folds away.
That matching took 1.6 s of ResNet-50's lowering here. The operator graph only needs the shapes of the folded
weight and bias, so this pass emits ``add(conv2d(x, W'), B')`` directly, with W' and B' placeholder constants
(uninitialized, like `shape_fold`'s: never compile the result). Same match conditions as TVM's pass: every
operand a constant, kernel layout OIHW or IOHW; the kernels that follow, and their workload hashes, are the same
(tests/relay_passes/test_bn_fold.py).
"""

from __future__ import annotations

import tvm
from tvm import relax
from tvm.relax.expr_functor import PyExprMutator, mutator


def _op_name(expr: object) -> str | None:
    if isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.Op):
        return str(expr.op.name)
    return None


def _placeholder(shape: list[int], dtype: str) -> tvm.ir.expr.Constant:
    return relax.const(tvm.runtime.empty(shape, dtype))


@mutator
class _BatchNormFolder(PyExprMutator):
    def __init__(self, mod: tvm.IRModule) -> None:
        super().__init__(mod)
        self.values: dict[object, relax.Expr] = {}  # var -> the value it was bound to (after rewriting)

    def _fold(self, item: relax.TupleGetItem) -> relax.Expr | None:
        """``add(conv2d(x, W'), B')`` for ``batch_norm(conv2d(x, W), ...)[0]`` with constant operands, else None."""
        if item.index != 0:
            return None
        bn = self.values.get(item.tuple_value, item.tuple_value)
        if _op_name(bn) != "relax.nn.batch_norm" or not all(isinstance(a, tvm.ir.expr.Constant) for a in bn.args[1:]):
            return None
        conv = self.values.get(bn.args[0], bn.args[0])
        if _op_name(conv) != "relax.nn.conv2d" or not isinstance(conv.args[1], tvm.ir.expr.Constant):
            return None
        if str(conv.attrs["kernel_layout"]) not in ("OIHW", "IOHW"):
            return None
        weight = conv.args[1].ty
        channels = int(bn.args[2].ty.shape.values[0])
        new_conv = relax.Call(conv.op, (conv.args[0], _placeholder([int(d) for d in weight.shape.values],
                                                                   str(weight.dtype))), conv.attrs)
        bias = _placeholder([1, channels, 1, 1], str(bn.args[2].ty.dtype))
        return self.builder_.normalize(relax.op.add(self.builder_.emit(new_conv), bias))

    def visit_var_binding_(self, binding: relax.VarBinding) -> None:
        value = self.visit_expr(binding.value)
        if isinstance(value, relax.TupleGetItem):
            folded = self._fold(value)
            if folded is not None:
                value = folded
        self.values[binding.var] = value
        self.builder_.emit_normalized(relax.VarBinding(binding.var, value))


def fold_batchnorm_by_shape(mod: tvm.IRModule) -> tvm.IRModule:
    """Fold batch norms into their conv2d in `main`, with placeholder constants (see module docstring)."""
    out = tvm.IRModule(dict(mod.functions.items()))
    out["main"] = _BatchNormFolder(mod).visit_expr(mod["main"])
    # TVM's pass rewrites through `rewrite_call`, which also canonicalizes bindings (a tuple item of a tuple
    # becomes the item itself), so values only such tuples kept alive die: do the same
    return tvm.transform.Sequential([relax.transform.CanonicalizeBindings(),
                                     relax.transform.DeadCodeElimination()])(out)
