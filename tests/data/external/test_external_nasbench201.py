"""Tests of the NAS-Bench-201 torch builder and its direct Relax lowering."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from tvm_cost.data.external.nasbench201 import Edge, NB201Cell, NB201Network, live_edges, parse_nb201

ALL_CONV = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|nor_conv_3x3~1|nor_conv_3x3~2|"
EXAMPLE = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"
ALL_NONE = "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|"
# node 1 is a conv, but only "none" edges leave it; node 2 is dead; the output node is dead too.
DEAD_OUTPUT = "|nor_conv_3x3~0|+|none~0|none~1|+|none~0|none~1|skip_connect~2|"
MIXED = "|nor_conv_1x1~0|+|skip_connect~0|none~1|+|avg_pool_3x3~0|nor_conv_1x1~1|nor_conv_3x3~2|"


def test_parse_example() -> None:
    edges = parse_nb201(EXAMPLE)
    assert edges[0] == Edge("nor_conv_3x3", 0, 1)
    assert [(e.src, e.dst) for e in edges] == [(0, 1), (0, 2), (1, 2), (0, 3), (1, 3), (2, 3)]


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|",  # two nodes
        "|conv_5x5~0|+|none~0|none~1|+|none~0|none~1|none~2|",  # unknown op
        "|none~1|+|none~0|none~1|+|none~0|none~1|none~2|",  # node 1 must read node 0
        "|none~0|+|none~0|none~0|+|none~0|none~1|none~2|",  # repeated input
        "none~0|+|none~0|none~1|+|none~0|none~1|none~2|",  # missing bar
        "|none0|+|none~0|none~1|+|none~0|none~1|none~2|",  # missing ~
    ],
)
def test_parse_errors_quote_the_string(bad: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_nb201(bad)
    assert repr(bad) in str(err.value)


def test_live_edges_drop_none_and_dead_nodes() -> None:
    assert live_edges(parse_nb201(ALL_NONE)) == ()
    assert live_edges(parse_nb201(DEAD_OUTPUT)) == ()
    assert live_edges(parse_nb201(MIXED)) == (
        Edge("nor_conv_1x1", 0, 1), Edge("skip_connect", 0, 2), Edge("avg_pool_3x3", 0, 3),
        Edge("nor_conv_1x1", 1, 3), Edge("nor_conv_3x3", 2, 3),
    )  # fmt: skip
    assert len(live_edges(parse_nb201(ALL_CONV))) == 6


def test_parameter_counts_match_nasbench201() -> None:
    # NAS-Bench-201 CIFAR-10 networks range from 0.073306 M to 1.531546 M parameters.
    assert sum(p.numel() for p in NB201Network(ALL_CONV).parameters()) == 1_531_546
    assert sum(p.numel() for p in NB201Network(ALL_NONE).parameters()) == 73_306


def test_forward_shapes_seeding_and_global_rng() -> None:
    state = torch.random.get_rng_state()
    a, b = NB201Network(MIXED, seed=1), NB201Network(MIXED, seed=1)
    assert torch.equal(torch.random.get_rng_state(), state), "building must not touch the global RNG"
    assert all(torch.equal(a.state_dict()[k], b.state_dict()[k]) for k in a.state_dict())
    assert not torch.equal(a.state_dict()["stem.0.weight"], NB201Network(MIXED, seed=2).state_dict()["stem.0.weight"])
    x = torch.randn(3, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert NB201Network(MIXED, cells_per_stage=1)(x).shape == (3, 10)
        zero = NB201Network(DEAD_OUTPUT, cells_per_stage=1, channels=4)
        assert torch.isfinite(zero(x)).all()


def test_none_edges_are_not_modules() -> None:
    net = NB201Network(MIXED, cells_per_stage=1)
    cells = [m for m in net.modules() if isinstance(m, NB201Cell)]
    assert len(cells) == 3 and all(len(c.ops) == 5 for c in cells)
    assert sum(isinstance(m, nn.AvgPool2d) for m in cells[0].modules()) == 1


# --- Relax --------------------------------------------------------------------------------------------------

SMALL: dict[str, Any] = {"channels": 4, "cells_per_stage": 1}


@pytest.fixture(scope="module")
def tvm_mod():  # noqa: ANN201
    return pytest.importorskip("tvm")


def _export(net: NB201Network, batch: int):  # noqa: ANN202
    from tvm.relax.frontend.torch import from_exported_program

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(net, (torch.zeros(batch, 3, 32, 32),))
        return from_exported_program(ep)


@pytest.mark.parametrize(
    ("arch", "kw"),
    [
        (MIXED, SMALL),
        (DEAD_OUTPUT, SMALL),
        (ALL_NONE, SMALL),
        pytest.param(EXAMPLE, {}, marks=pytest.mark.slow, id="full-size"),  # 2-4 s; same code paths as SMALL
    ],
)
def test_relax_equals_torch_export(tvm_mod, arch: str, kw: dict[str, Any]) -> None:  # noqa: ANN001
    from tvm_cost.data.external.nasbench201_relax import nb201_to_relax

    net = NB201Network(arch, seed=3, **kw)
    # Same ops, order, attributes and constant weights as the official frontend.
    tvm_mod.ir.assert_structural_equal(nb201_to_relax(net, batch=2), _export(net, 2))


def test_relax_runs_like_torch(tvm_mod) -> None:  # noqa: ANN001
    from tvm import relax

    from tvm_cost.data.external.nasbench201_relax import nb201_to_relax

    net = NB201Network(MIXED, seed=5, **SMALL)
    mod = nb201_to_relax(MIXED, batch=2, seed=5, **SMALL)  # rebuilt from the string: same seeded weights
    vm = relax.VirtualMachine(tvm_mod.compile(mod, target="llvm"), tvm_mod.cpu())
    x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    (out,) = vm["main"](tvm_mod.runtime.tensor(x.numpy()))
    with torch.no_grad():
        np.testing.assert_allclose(out.numpy(), net(x).numpy(), rtol=1e-4, atol=1e-4)


def test_relax_rejects_bad_input(tvm_mod) -> None:  # noqa: ANN001
    from tvm_cost.data.external.nasbench201_relax import nb201_to_relax

    with pytest.raises(ValueError, match="batch must be >= 1"):
        nb201_to_relax(MIXED, batch=0)
    with pytest.raises(TypeError):
        nb201_to_relax(42)  # type: ignore[arg-type]


# --- as run (HELP's networks) --------------------------------------------------------------------------------


def test_as_run_cells_compute_every_edge() -> None:
    from tvm_cost.data.external.nasbench201 import Zero

    net = NB201Network(MIXED, as_run=True, **SMALL)
    cells = [m for m in net.modules() if isinstance(m, NB201Cell)]
    n_none = MIXED.count("none~")
    assert all(len(c.ops) == 6 and sum(isinstance(o, Zero) for o in c.ops) == n_none for c in cells)
    minimal = NB201Network(MIXED, seed=4, **SMALL)
    x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    as_run = NB201Network(MIXED, seed=5, as_run=True, **SMALL)
    shared = {k: v for k, v in minimal.state_dict().items() if ".ops." not in k}  # stem, blocks, classifier
    as_run.load_state_dict(shared, strict=False)
    for full, kept in zip(as_run.cells, minimal.cells):  # copy each kept edge's op onto the same edge
        if isinstance(full, NB201Cell) and isinstance(kept, NB201Cell):
            for edge, op in zip(kept.edges, kept.ops):
                full.ops[full.edges.index(edge)].load_state_dict(op.state_dict())
    with torch.no_grad():  # x * 0 and edges into dead nodes add nothing
        np.testing.assert_allclose(as_run(x).numpy(), minimal(x).numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("arch", [MIXED, DEAD_OUTPUT, ALL_NONE])
def test_as_run_relax_equals_torch_export(tvm_mod, arch: str) -> None:  # noqa: ANN001
    from tvm_cost.data.external.nasbench201_relax import nb201_to_relax

    net = NB201Network(arch, seed=3, as_run=True, **SMALL)
    tvm_mod.ir.assert_structural_equal(nb201_to_relax(net, batch=2), _export(net, 2))


def test_as_run_keeps_the_kernels_the_minimal_graph_drops(tvm_mod) -> None:  # noqa: ANN001
    from relay_passes.lower import lower
    from tvm_cost.data.external.nasbench201_relax import nb201_to_relax

    def n_kernels(mod) -> int:  # noqa: ANN001
        return len(lower(mod, tvm_mod.target.Target({"kind": "llvm", "num-cores": 1})).op_kinds)

    as_run = n_kernels(nb201_to_relax(DEAD_OUTPUT, batch=2, fold_batch_norm=True, as_run=True, **SMALL))
    minimal = n_kernels(nb201_to_relax(DEAD_OUTPUT, batch=2, fold_batch_norm=True, **SMALL))
    assert as_run > minimal  # a dead output makes the minimal network (nearly) constant; PyTorch still ran it
