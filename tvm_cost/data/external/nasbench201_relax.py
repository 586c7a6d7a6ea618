"""NAS-Bench-201 networks straight to Relax, without ``torch.export``.

Why: ``torch.export`` + ``from_exported_program`` costs about 1-2 s per network on one CPU core, which is hours
for all 15,625 cells. Emitting the same Relax ops with ``relax.BlockBuilder`` from the torch module tree takes
a few tens of milliseconds. The output is meant to be structurally equal to what
``tvm.relax.frontend.torch.from_exported_program`` gives for the same :class:`NB201Network` (same ops, order,
attributes and constant weights), so downstream passes see the same graph either way; the tests check this.

``fold_batch_norm=True`` emits each conv + batch norm as the conv with scaled weights plus a bias add: the form
``relax.transform.FoldBatchnormToConv2D`` (which ``relay_passes.lower`` and ``tvm_cost.e2e`` run) and constant
folding give, so lowering has nothing to fold there (0.5 s less per full-size network here). That pass's pattern
rewriter also merges identical calls (two ``relu`` of one node, ``x + x`` computed twice);
``EliminateCommonSubexpr`` does the same here. The lowered kernels, their workload hashes and the graph features
are the same as after TVM's pass; the tests check this.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from tvm_cost.data.external.nasbench201 import NB201Cell, NB201Network, ResNetBasicBlock, Zero

if TYPE_CHECKING:
    import tvm
    from tvm import relax

__all__ = ["nb201_to_relax"]

logger = logging.getLogger(__name__)


def nb201_to_relax(
    arch: str | NB201Network,
    *,
    batch: int = 1,
    channels: int = 16,
    cells_per_stage: int = 5,
    num_classes: int = 10,
    seed: int = 0,
    fold_batch_norm: bool = False,
    as_run: bool = False,
) -> tvm.IRModule:
    """Builds the Relax module of a NAS-Bench-201 network, weights bound as constants.

    Args:
        arch: A cell string, or an already built :class:`NB201Network` (then the size knobs and ``seed`` are
            ignored and its weights are used).
        batch: Batch size of the input.
        channels: Stem width, as in :class:`NB201Network`.
        cells_per_stage: Cells per stage, as in :class:`NB201Network`.
        num_classes: Classifier outputs.
        seed: Weight seed, as in :class:`NB201Network`.
        fold_batch_norm: Emit conv + batch norm in inference form (conv with scaled weights, then a bias add),
            as ``FoldBatchnormToConv2D`` would rewrite it; the module is then no longer equal to the frontend's.
        as_run: Every cell edge computed, ``none`` as ``x * 0`` (`NB201Network`'s ``as_run``): the ops HELP's
            PyTorch runs launched, which the minimal graph leaves out.

    Returns:
        An IRModule whose ``main(x)`` returns a 1-tuple with the logits, like ``from_exported_program``.

    Shapes:
        x: (batch, 3, 32, 32) -> ((batch, num_classes),)
    """
    from tvm import relax

    if isinstance(arch, str):
        net = NB201Network(
            arch, channels=channels, cells_per_stage=cells_per_stage, num_classes=num_classes, seed=seed,
            as_run=as_run,
        )
    elif isinstance(arch, NB201Network):
        net = arch
    else:
        raise TypeError(f"arch must be a cell string or an NB201Network, got {type(arch).__name__}")
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((batch, 3, 32, 32), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = _Emitter(bb, fold_batch_norm=fold_batch_norm).network(net, x, batch)
            gv = bb.emit_output(relax.Tuple([out]))
        bb.emit_func_output(gv)
    mod = bb.get()
    return relax.transform.EliminateCommonSubexpr()(mod) if fold_batch_norm else mod


def _const(t: torch.Tensor) -> relax.Constant:
    from tvm import relax

    return relax.const(t.detach().cpu().numpy())


class _Emitter:
    """Emits one binding per op, in the order ``from_exported_program`` does."""

    def __init__(self, bb: relax.BlockBuilder, *, fold_batch_norm: bool = False) -> None:
        from tvm import relax

        self.bb = bb
        self.fold_batch_norm = fold_batch_norm
        self.op = relax.op
        self.relax = relax

    def network(self, net: NB201Network, x: relax.Expr, batch: int) -> relax.Expr:
        y = self.module(net.lastact, self.module(net.cells, self.module(net.stem, x)))
        y = self.bb.emit(self.op.mean(y, axis=[-1, -2], keepdims=True))
        y = self.bb.emit(self.op.reshape(y, (batch, net.classifier.in_features)))
        w = self.bb.emit(self.op.permute_dims(_const(net.classifier.weight), axes=[1, 0]))
        y = self.bb.emit(self.op.matmul(y, w, out_dtype="float32"))
        return self.bb.emit(self.op.add(_const(net.classifier.bias), y))

    def module(self, m: nn.Module, x: relax.Expr) -> relax.Expr:
        """Dispatches on the module type; raises ``TypeError`` on anything NB201 does not use."""
        if isinstance(m, nn.Sequential):
            children = list(m)
            i = 0
            while i < len(children):
                conv, bn = children[i], children[i + 1] if i + 1 < len(children) else None
                if self.fold_batch_norm and isinstance(conv, nn.Conv2d) and isinstance(bn, nn.BatchNorm2d):
                    x = self.conv2d_folded(conv, bn, x)
                    i += 2
                else:
                    x = self.module(children[i], x)
                    i += 1
            return x
        if isinstance(m, nn.Identity):
            return x
        if isinstance(m, Zero):
            return self.bb.emit(self.op.multiply(x, self.relax.const(0.0, "float32")))
        if isinstance(m, nn.ReLU):
            return self.bb.emit(self.op.nn.relu(x))
        if isinstance(m, nn.Conv2d):
            return self.conv2d(m, x)
        if isinstance(m, nn.BatchNorm2d):
            return self.batch_norm(m, x)
        if isinstance(m, nn.AvgPool2d):
            return self.bb.emit(
                self.op.nn.avg_pool2d(
                    x,
                    pool_size=_pair(m.kernel_size),
                    strides=_pair(m.stride),
                    padding=_pair(m.padding),
                    ceil_mode=m.ceil_mode,
                    count_include_pad=m.count_include_pad,
                    layout="NCHW",
                    out_layout="NCHW",
                )
            )
        if isinstance(m, ResNetBasicBlock):
            shortcut = self.module(m.downsample, x)
            return self.bb.emit(self.op.add(shortcut, self.module(m.conv_b, self.module(m.conv_a, x))))
        if isinstance(m, NB201Cell):
            return self.cell(m, x)
        raise TypeError(f"no Relax lowering for {type(m).__name__}")

    def cell(self, cell: NB201Cell, x: relax.Expr) -> relax.Expr:
        nodes: dict[int, relax.Expr] = {0: x}
        for edge, op in zip(cell.edges, cell.ops):
            y = self.module(op, nodes[edge.src])
            nodes[edge.dst] = self.bb.emit(self.op.add(nodes[edge.dst], y)) if edge.dst in nodes else y
        out = nodes.get(3)
        if out is None:  # the output node is dead: the cell is a zero tensor
            out = self.bb.emit(self.op.full_like(x, self.relax.const(0.0, "float32")))
        return out

    def conv2d(self, m: nn.Conv2d, x: relax.Expr, *, weight: relax.Constant | None = None) -> relax.Expr:
        return self.bb.emit(
            self.op.nn.conv2d(
                x,
                _const(m.weight) if weight is None else weight,
                strides=_pair(m.stride),
                padding=_pair(m.padding),
                dilation=_pair(m.dilation),
                groups=m.groups,
                data_layout="NCHW",
                kernel_layout="OIHW",
                out_layout="NCHW",
                out_dtype="float32",
            )
        )

    def conv2d_folded(self, conv: nn.Conv2d, bn: nn.BatchNorm2d, x: relax.Expr) -> relax.Expr:
        """``conv2d(x, w * s) + b`` with ``s = gamma / sqrt(var + eps)``, ``b = beta - mean * s`` (float32), exactly
        the arithmetic ``FoldBatchnormToConv2D`` emits, done here in numpy."""
        assert bn.running_mean is not None and bn.running_var is not None
        gamma, beta, mean, var = (t.detach().cpu().numpy() for t in (bn.weight, bn.bias, bn.running_mean,
                                                                     bn.running_var))
        scale = gamma / np.sqrt(var + np.float32(bn.eps))
        bias = (beta - mean * scale).reshape(1, -1, 1, 1)
        weight = conv.weight.detach().cpu().numpy() * scale.reshape(-1, 1, 1, 1)
        y = self.conv2d(conv, x, weight=self.relax.const(weight))
        return self.bb.emit(self.op.add(y, self.relax.const(bias)))

    def batch_norm(self, m: nn.BatchNorm2d, x: relax.Expr) -> relax.Expr:
        assert m.running_mean is not None and m.running_var is not None  # NB201 tracks statistics
        bn = self.op.nn.batch_norm(
            x,
            _const(m.weight),
            _const(m.bias),
            _const(m.running_mean),
            _const(m.running_var),
            axis=1,
            epsilon=m.eps,
            center=True,
            scale=True,
            momentum=0.1,
            training=False,
        )
        return self.bb.emit(self.relax.TupleGetItem(self.bb.emit(bn), 0))


def _pair(v: int | tuple[int, ...] | str) -> tuple[int, int]:
    if isinstance(v, int):
        return (v, v)
    if isinstance(v, tuple) and len(v) == 2:
        return (int(v[0]), int(v[1]))
    raise ValueError(f"expected an int or a pair, got {v!r}")
