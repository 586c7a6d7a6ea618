"""`LegalizeCache`: lowering with it gives TVM's own module (same PrimFuncs, names, fusion) and the same graphs."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
import tvm
from tvm import relax

from relay_passes.build import graph_from_lowered
from relay_passes.legalize_cache import LegalizeCache
from relay_passes.lower import lower
from tvm_cost.data.external.nasbench201_relax import nb201_to_relax
from tvm_cost.features.arrays import graph_arrays
from tvm_cost.targets import resolve_target

SMALL: dict[str, Any] = {"channels": 4, "cells_per_stage": 1, "batch": 2}
CELLS = ("|nor_conv_1x1~0|+|skip_connect~0|none~1|+|avg_pool_3x3~0|nor_conv_1x1~1|nor_conv_3x3~2|",
         "|nor_conv_3x3~0|+|nor_conv_1x1~0|skip_connect~1|+|avg_pool_3x3~0|none~1|nor_conv_3x3~2|",
         "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|avg_pool_3x3~1|nor_conv_1x1~2|")


def _same_module(a: tvm.IRModule, b: tvm.IRModule) -> None:
    assert [gv.name_hint for gv in a.functions] == [gv.name_hint for gv in b.functions]
    for gv in a.functions:
        if gv.name_hint != "main":  # main's folded constants are uninitialized buffers (shape folding)
            tvm.ir.assert_structural_equal(a[gv.name_hint], b[gv.name_hint])


@pytest.mark.parametrize("as_run", [False, True])
def test_cached_lowering_is_tvms(as_run: bool) -> None:
    resolved = resolve_target("llvm")
    target = resolved.tvm_target()
    cache = LegalizeCache()
    for cell in CELLS:
        mod = nb201_to_relax(cell, as_run=as_run, **SMALL)
        plain, cached = lower(mod, target), lower(mod, target, legalize_cache=cache)
        _same_module(plain.mod, cached.mod)
        assert plain.op_kinds == cached.op_kinds
        a = graph_arrays(graph_from_lowered(plain, resolved, batch_size=2))
        b = graph_arrays(graph_from_lowered(cached, resolved, batch_size=2))
        assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    assert cache.hits > cache.misses > 0  # later cells reuse the first cell's convolutions, adds, pools


def test_new_shapes_are_legalized_and_the_module_is_still_tvms() -> None:
    target = resolve_target("llvm").tvm_target()
    cache = LegalizeCache()
    lower(nb201_to_relax(CELLS[0], **SMALL), target, legalize_cache=cache)
    misses = cache.misses
    bigger = nb201_to_relax(CELLS[0], **{**SMALL, "batch": 3})
    _same_module(lower(bigger, target).mod, lower(bigger, target, legalize_cache=cache).mod)
    assert cache.misses > misses  # the batch-3 activations' ops are new calls, not batch-2 functions


def test_threads_sharing_a_cache_get_tvms_modules_and_leave_block_builder_unpatched() -> None:
    target = resolve_target("llvm").tvm_target()
    cache = LegalizeCache()
    add_func = relax.BlockBuilder.add_func
    mods = [nb201_to_relax(cell, **SMALL) for cell in CELLS] * 2
    with ThreadPoolExecutor(max_workers=3) as pool:
        cached = list(pool.map(lambda mod: lower(mod, target, legalize_cache=cache), mods))
    assert relax.BlockBuilder.add_func is add_func
    for mod, result in zip(mods, cached, strict=True):
        _same_module(lower(mod, target).mod, result.mod)
    assert cache.hits > 0
