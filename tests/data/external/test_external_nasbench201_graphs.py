"""NAS-Bench-201 graphs in bulk: folded batch-norm emission gives TVM's kernels unchanged; the converter resumes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

pytest.importorskip("tvm")

from relay_passes.build import graph_from_lowered  # noqa: E402
from relay_passes.lower import lower  # noqa: E402
from tvm_cost.data.external.nasbench201 import NB201Network  # noqa: E402
from tvm_cost.data.external.nasbench201_graphs import (  # noqa: E402
    NB201GraphConverter,
    cell_order,
    graph_path,
    load_graphs,
)
from tvm_cost.data.external.nasbench201_relax import nb201_to_relax  # noqa: E402
from tvm_cost.errors import TvmCostError  # noqa: E402
from tvm_cost.features.arrays import graph_arrays  # noqa: E402
from tvm_cost.targets import resolve_target  # noqa: E402

SMALL: dict[str, Any] = {"channels": 4, "cells_per_stage": 2, "batch": 2}
CELLS = (
    "|nor_conv_1x1~0|+|skip_connect~0|none~1|+|avg_pool_3x3~0|nor_conv_1x1~1|nor_conv_3x3~2|",
    "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|nor_conv_3x3~1|nor_conv_3x3~2|",
    # identical calls for the pattern rewriter to merge: relu/avg_pool of one node, x + x twice
    "|skip_connect~0|+|skip_connect~0|skip_connect~1|+|skip_connect~0|skip_connect~1|skip_connect~2|",
    "|avg_pool_3x3~0|+|avg_pool_3x3~0|avg_pool_3x3~1|+|avg_pool_3x3~0|avg_pool_3x3~1|avg_pool_3x3~2|",
    "|nor_conv_1x1~0|+|nor_conv_1x1~0|none~1|+|nor_conv_1x1~0|none~1|nor_conv_1x1~2|",
)
CONSTANT = "|none~0|+|skip_connect~0|nor_conv_1x1~1|+|none~0|nor_conv_3x3~1|none~2|"  # output node is dead


def _prim_funcs(mod):  # noqa: ANN001, ANN202
    import tvm

    return {gv.name_hint: f for gv, f in mod.functions.items() if isinstance(f, tvm.tirx.PrimFunc)}


@pytest.mark.parametrize("cell", CELLS)
def test_folded_batch_norm_lowers_to_the_same_kernels(cell: str) -> None:
    """Emitting the folded form gives the kernels of TVM's FoldBatchnormToConv2D (merged identical calls too)."""
    import tvm_ffi

    from tvm import relax

    resolved = resolve_target("llvm")
    # the reference: TVM's own pass on the frontend-equal module, then the rest of `lower`
    reference = relax.transform.FoldBatchnormToConv2D()(nb201_to_relax(cell, **SMALL))
    low = {False: lower(reference, resolved.tvm_target()),
           True: lower(nb201_to_relax(cell, fold_batch_norm=True, **SMALL), resolved.tvm_target())}
    funcs = {fold: _prim_funcs(low[fold].mod) for fold in low}
    assert funcs[False].keys() == funcs[True].keys() and low[False].op_kinds == low[True].op_kinds
    assert all(tvm_ffi.structural_equal(funcs[False][n], funcs[True][n]) for n in funcs[False])
    graphs = {fold: graph_from_lowered(low[fold], resolved, batch_size=2) for fold in low}
    assert [n.workload_hash for n in graphs[False].nodes] == [n.workload_hash for n in graphs[True].nodes]
    a, b = graph_arrays(graphs[False]), graph_arrays(graphs[True])
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_folded_batch_norm_runs_like_torch() -> None:
    import tvm
    from tvm import relax

    net = NB201Network(CELLS[0], seed=5, channels=4, cells_per_stage=1)
    vm = relax.VirtualMachine(tvm.compile(nb201_to_relax(net, batch=2, fold_batch_norm=True), target="llvm"),
                              tvm.cpu())
    x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    (out,) = vm["main"](tvm.runtime.tensor(x.numpy()))
    with torch.no_grad():
        np.testing.assert_allclose(out.numpy(), net(x).numpy(), rtol=1e-4, atol=1e-4)


def test_cell_order_is_a_seeded_permutation() -> None:
    order = cell_order(seed=0)
    assert sorted(order.tolist()) == list(range(15_625))
    assert np.array_equal(order, cell_order(seed=0)) and not np.array_equal(order, cell_order(seed=1))


def test_converter_stores_resumes_and_marks_constant_networks(tmp_path) -> None:
    converter = NB201GraphConverter(tmp_path, target="llvm")
    seconds = converter.convert(7, CELLS[4], 1)
    assert seconds is not None and seconds > 0
    assert converter.convert(7, CELLS[4], 1) is None  # stored: skipped
    assert converter.convert(9, CONSTANT, 1) is None and graph_path(tmp_path, 1, 9).with_suffix(".empty").exists()
    graphs = load_graphs(tmp_path, 1)
    assert list(graphs) == [7]
    expected = converter.arrays(CELLS[4], 1)
    assert all(np.array_equal(graphs[7][k], expected[k]) for k in expected)
    assert (tmp_path / "timings.jsonl").read_text().count("\n") == 1
    with pytest.raises(TvmCostError, match="no NAS-Bench-201 graphs for batch 32"):
        load_graphs(tmp_path, 32)


def test_a_cell_tvm_fails_on_is_marked_and_skipped(tmp_path, monkeypatch, caplog) -> None:
    converter = NB201GraphConverter(tmp_path, target="llvm")

    def tvm_fails(arch: str, batch: int) -> None:
        raise ValueError("deep in DLight\nThe block no longer exists in the IRModule")

    monkeypatch.setattr(converter, "arrays", tvm_fails)
    assert converter.convert(3, CELLS[4], 1) is None
    marker = graph_path(tmp_path, 1, 3).with_suffix(".failed")
    assert marker.read_text() == "ValueError: The block no longer exists in the IRModule\n"
    assert "nb201 cell 3 at batch 1: TVM failed" in caplog.text
    monkeypatch.undo()
    assert converter.convert(3, CELLS[4], 1) is None  # marked: not retried until the marker is deleted
    marker.unlink()
    assert converter.convert(3, CELLS[4], 1) is not None
