"""Static counts from a PrimFunc's TIR: FLOPs, bytes, loops and blocks.

FLOPs are floating-point arithmetic operations (a multiply-add counts 2), each counted once per iteration of the
loops around its store; integer index arithmetic is not counted. Bytes are the compulsory traffic: every parameter
buffer (inputs and outputs) read or written once.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import tvm
import tvm_ffi
from tvm import s_tir, tirx

_ARITH = (tirx.Add, tirx.Sub, tirx.Mul, tirx.Div, tirx.Max, tirx.Min, tirx.FloorDiv, tirx.Mod, tirx.FloorMod)
# Calls that select or reinterpret values rather than compute them.
_NON_ARITH_CALLS = {"if_then_else", "likely", "reinterpret", "isnan", "isinf", "isfinite"}


@dataclass
class TirStats:
    """Counts of one PrimFunc.

    Attributes:
        flops: Floating-point operations of the whole function.
        anchor_flops: FLOPs of its heaviest block (the conv or matmul in a fused kernel).
        bytes: Bytes of all parameter buffers (inputs + outputs).
        output_bytes: Bytes of the last parameter (the output TVM writes).
        blocks: Number of blocks (one per legalized op and padding stage, more after scheduling).
        loops: Number of loops.
        max_loop_depth: Deepest loop nest.
        reduction_extent: Product of the reduction axes of the anchor block (1 for injective ops).
        parallel_loops / vectorized_loops / unrolled_loops / thread_loops: loop kinds (schedule-dependent).
    """

    flops: float = 0.0
    anchor_flops: float = 0.0
    bytes: float = 0.0
    output_bytes: float = 0.0
    blocks: int = 0
    loops: int = 0
    max_loop_depth: int = 0
    reduction_extent: float = 1.0
    parallel_loops: int = 0
    vectorized_loops: int = 0
    unrolled_loops: int = 0
    thread_loops: int = 0

    def as_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items()}


def _expr_flops(expr: tvm.ir.PrimExpr) -> int:
    count = 0

    def visit(node: object) -> None:
        nonlocal count
        if isinstance(node, _ARITH):
            if str(node.ty).startswith(("float", "bfloat")):
                count += 1
        elif isinstance(node, tvm.ir.expr.Call) and isinstance(node.op, tvm.ir.Op):
            if str(node.ty).startswith(("float", "bfloat")) and node.op.name.rsplit(".", 1)[-1] not in _NON_ARITH_CALLS:
                count += 1

    tvm_ffi.structural_walk(expr, visit)
    return count


def param_tensors(func: tirx.PrimFunc) -> list[tuple[tuple[int, ...], str]]:
    """(shape, dtype) of each tensor parameter, as MetaSchedule's ArgInfo sees them."""
    from tvm.s_tir.meta_schedule.arg_info import ArgInfo

    out = []
    for info in ArgInfo.from_prim_func(func):
        shape = tuple(int(d) for d in info.shape)
        out.append((shape, str(info.dtype)))
    return out


def tensor_bytes(shape: tuple[int, ...], dtype: str) -> float:
    elems = 1
    for dim in shape:
        elems *= dim
    return float(elems * tvm.runtime.DataType(dtype).bits // 8)


class _Walker:
    def __init__(self) -> None:
        self.stats = TirStats()
        self._block_flops: list[tuple[float, float]] = []  # (own flops, reduction extent) per block
        self._open: list[float] = []  # FLOPs of the blocks being walked, innermost last

    def stmt(self, node: object, trip: float, depth: int) -> None:
        s = self.stats
        if isinstance(node, tirx.For):
            s.loops += 1
            s.max_loop_depth = max(s.max_loop_depth, depth + 1)
            kind = int(node.kind)
            s.parallel_loops += kind == 1
            s.vectorized_loops += kind == 2
            s.unrolled_loops += kind == 3
            s.thread_loops += kind == 4
            extent = float(node.extent.value) if isinstance(node.extent, tirx.IntImm) else 1.0
            self.stmt(node.body, trip * extent, depth + 1)
        elif isinstance(node, tirx.SeqStmt):
            for child in node.seq:
                self.stmt(child, trip, depth)
        elif isinstance(node, s_tir.SBlockRealize):
            self.stmt(node.block, trip, depth)
        elif isinstance(node, s_tir.SBlock):
            s.blocks += 1
            self._open.append(0.0)
            self.stmt(node.body, trip, depth)
            red = 1.0
            for iv in node.iter_vars:
                if int(iv.iter_type) == 2 and isinstance(iv.dom.extent, tirx.IntImm):  # CommReduce
                    red *= float(iv.dom.extent.value)
            self._block_flops.append((self._open.pop(), red))
        elif isinstance(node, tirx.BufferStore):
            flops = trip * _expr_flops(node.value)
            s.flops += flops
            if self._open:
                self._open[-1] += flops
        elif isinstance(node, tirx.IfThenElse):
            self.stmt(node.then_case, trip, depth)
            if node.else_case is not None:
                self.stmt(node.else_case, trip, depth)
        elif hasattr(node, "body"):  # AttrStmt, LetStmt, AllocBuffer, DeclBuffer, While, ...
            self.stmt(node.body, trip, depth)


def tir_stats(func: tirx.PrimFunc) -> TirStats:
    """Count FLOPs, bytes, loops and blocks of `func` (scheduled or not)."""
    walker = _Walker()
    walker.stmt(func.body, 1.0, 0)
    stats = walker.stats
    tensors = param_tensors(func)
    stats.bytes = sum(tensor_bytes(*t) for t in tensors)
    stats.output_bytes = tensor_bytes(*tensors[-1]) if tensors else 0.0
    blocks = [b for b in walker._block_flops if b[0] > 0] or [(0.0, 1.0)]
    stats.anchor_flops, stats.reduction_extent = max(blocks)
    return stats
