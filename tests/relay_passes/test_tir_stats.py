"""FLOP and byte counts against closed forms derived by hand."""

from __future__ import annotations

import tvm
from tvm import te

from relay_passes.tir_stats import tir_stats


def _prim_func(outs: list[te.Tensor], ins: list[te.Tensor]) -> tvm.tirx.PrimFunc:
    return te.create_prim_func([*ins, *outs])


def test_matmul_counts_two_flops_per_multiply_add():
    m, n, k = 4, 6, 8
    a = te.placeholder((m, k), name="a")
    b = te.placeholder((k, n), name="b")
    r = te.reduce_axis((0, k), name="r")
    c = te.compute((m, n), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="c")
    stats = tir_stats(_prim_func([c], [a, b]))
    assert stats.flops == 2 * m * n * k
    assert stats.anchor_flops == 2 * m * n * k
    assert stats.reduction_extent == k
    assert stats.bytes == 4 * (m * k + k * n + m * n)
    assert stats.output_bytes == 4 * m * n


def test_padding_and_index_math_are_not_flops():
    a = te.placeholder((1, 3, 8, 8), name="a")
    padded = te.compute((1, 3, 10, 10), lambda n, c, h, w: te.if_then_else(
        te.all(h >= 1, h < 9, w >= 1, w < 9), a[n, c, h - 1, w - 1], 0.0), name="pad")
    stats = tir_stats(_prim_func([padded], [a]))
    assert stats.flops == 0
    assert stats.blocks >= 1 and stats.loops == 4 and stats.max_loop_depth == 4


def test_elementwise_epilogue_adds_one_flop_per_element():
    a = te.placeholder((16, 16), name="a", dtype="float32")
    b = te.compute((16, 16), lambda i, j: te.max(a[i, j] * 2.0 + 1.0, 0.0), name="b")
    assert tir_stats(_prim_func([b], [a])).flops == 3 * 16 * 16
