"""NAS-Bench-201 networks as torch modules, built from their cell strings.

The HELP latencies (see :mod:`tvm_cost.data.external.help`) were measured on these networks; rebuilding them
here lets the project import each one into TVM Relax and pair its operator graph with the measured latency.

The macro skeleton follows the original ``TinyNetwork`` of NAS-Bench-201 (Dong & Yang, ICLR 2020,
https://arxiv.org/abs/2001.00326; code in D-X-Y/AutoDL-Projects): stem conv 3x3 (16 channels) + BN; three
stages of ``cells_per_stage`` cells with 16/32/64 channels; a ResNet basic block with stride 2 between stages;
BN + ReLU, global average pool, linear classifier.

Two forms of a cell (``as_run``):

- ``as_run=True`` computes every edge as NAS-Bench-201's ``InferCell`` does, ``none`` as ``x * 0`` (its ``Zero``
  op): the network HELP's latencies were measured on, with every op PyTorch launched.
- ``as_run=False`` (the default) drops ``none`` edges and edges that only read or feed dead nodes (a node with no
  live input is zero; a node that cannot reach the cell output is unused): the minimal graph a compiler keeps.
  Only such degenerate edges differ numerically from the original; a cell whose output node is dead returns
  ``zeros_like(input)``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn

__all__ = [
    "NB201_OPS",
    "Edge",
    "NB201Cell",
    "NB201Network",
    "ReLUConvBN",
    "ResNetBasicBlock",
    "Zero",
    "live_edges",
    "parse_nb201",
]

NB201_OPS = ("none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3")
_NUM_NODES = 4  # node 0 is the cell input, node 3 the output


class Edge(NamedTuple):
    """One cell edge: ``node[dst] += op(node[src])``."""

    op: str
    src: int
    dst: int


def parse_nb201(arch: str) -> tuple[Edge, ...]:
    """Parses a cell string such as ``|nor_conv_3x3~0|+|skip_connect~0|none~1|+|...|``.

    Returns:
        The six edges, ordered by (dst, src).

    Raises:
        ValueError: If the string is not a valid NAS-Bench-201 cell; the message quotes it.
    """
    nodes = arch.strip().split("+") if isinstance(arch, str) else []
    if len(nodes) != _NUM_NODES - 1:
        raise ValueError(f"not a NAS-Bench-201 cell (want 3 '+'-separated nodes): {arch!r}")
    edges: list[Edge] = []
    for dst, node in enumerate(nodes, start=1):
        if not (node.startswith("|") and node.endswith("|")) or len(node) < 2:
            raise ValueError(f"node {dst} must be wrapped in '|': {arch!r}")
        srcs = []
        for item in node[1:-1].split("|"):
            op, sep, src = item.partition("~")
            if not sep or op not in NB201_OPS or not src.isdigit():
                raise ValueError(f"bad edge {item!r} (want op~input, op in {NB201_OPS}): {arch!r}")
            srcs.append(int(src))
            edges.append(Edge(op, int(src), dst))
        if sorted(srcs) != list(range(dst)):
            raise ValueError(f"node {dst} must read nodes 0..{dst - 1} once each: {arch!r}")
    return tuple(sorted(edges, key=lambda e: (e.dst, e.src)))


def live_edges(edges: tuple[Edge, ...]) -> tuple[Edge, ...]:
    """Drops ``none`` edges and edges from dead nodes or into nodes that never reach the output.

    Returns:
        The edges that a minimal graph computes, in the input order; empty if the output is always zero.
    """
    real = [e for e in edges if e.op != "none"]
    alive = {0}  # forward: reachable from the input
    for e in sorted(real, key=lambda e: e.dst):
        if e.src in alive:
            alive.add(e.dst)
    useful = {_NUM_NODES - 1}  # backward: reaches the output
    for e in sorted(real, key=lambda e: -e.dst):
        if e.dst in useful:
            useful.add(e.src)
    return tuple(e for e in edges if e.op != "none" and e.src in alive and e.dst in useful)


class ReLUConvBN(nn.Sequential):
    """ReLU -> Conv2d (no bias) -> BatchNorm2d, the NAS-Bench-201 ``nor_conv`` op."""

    def __init__(self, c_in: int, c_out: int, kernel: int, stride: int, *, device: str | None = None) -> None:
        super().__init__(
            nn.ReLU(inplace=False),
            nn.Conv2d(c_in, c_out, kernel, stride, kernel // 2, bias=False, device=device),
            nn.BatchNorm2d(c_out, device=device),
        )


class ResNetBasicBlock(nn.Module):
    """The stride-2 reduction block between stages: two ReLUConvBN plus an avgpool + 1x1 conv shortcut."""

    def __init__(self, c_in: int, c_out: int, *, device: str | None = None) -> None:
        super().__init__()
        self.conv_a = ReLUConvBN(c_in, c_out, 3, 2, device=device)
        self.conv_b = ReLUConvBN(c_out, c_out, 3, 1, device=device)
        self.downsample = nn.Sequential(
            nn.AvgPool2d(kernel_size=2, stride=2, padding=0),
            nn.Conv2d(c_in, c_out, 1, 1, 0, bias=False, device=device),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.downsample(x) + self.conv_b(self.conv_a(x))


class Zero(nn.Module):
    """The NAS-Bench-201 ``none`` op as it runs there: ``x * 0`` (a real kernel, not a missing edge)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mul(0.0)


def _make_op(op: str, channels: int, device: str | None) -> nn.Module:
    if op == "none":
        return Zero()
    if op == "skip_connect":
        return nn.Identity()
    if op == "avg_pool_3x3":
        return nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)
    kernel = {"nor_conv_1x1": 1, "nor_conv_3x3": 3}[op]
    return ReLUConvBN(channels, channels, kernel, 1, device=device)


class NB201Cell(nn.Module):
    """A 4-node cell: ``node[j] = sum_{i<j} op_ij(node[i])`` over all its edges (``as_run``) or its live ones.

    Shapes:
        x: (N, C, H, W) -> (N, C, H, W)
    """

    def __init__(self, edges: tuple[Edge, ...], channels: int, *, device: str | None = None,
                 as_run: bool = False) -> None:
        super().__init__()
        self.edges = tuple(edges) if as_run else live_edges(edges)
        self.ops = nn.ModuleList(_make_op(e.op, channels, device) for e in self.edges)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        nodes: dict[int, torch.Tensor] = {0: x}
        for edge, op in zip(self.edges, self.ops):
            y = op(nodes[edge.src])
            nodes[edge.dst] = nodes[edge.dst] + y if edge.dst in nodes else y
        out = nodes.get(_NUM_NODES - 1)
        return torch.zeros_like(x) if out is None else out


class NB201Network(nn.Module):
    """The NAS-Bench-201 CIFAR network for one cell string, with seeded random weights.

    Weights are created on the meta device and then filled from an explicit ``torch.Generator``, so building
    a network neither reads nor advances the global RNG.

    Args:
        arch: The cell string (see :func:`parse_nb201`).
        channels: Stem width; the stages use 1x, 2x, 4x this (16 in NAS-Bench-201).
        cells_per_stage: Cells per stage (5 in NAS-Bench-201); smaller values give quick test networks.
        num_classes: Classifier outputs (10 for CIFAR-10).
        seed: Seed of the weight generator.
        as_run: Every edge computed, ``none`` as ``x * 0``, as NAS-Bench-201 (and HELP) ran it; default: the
            minimal graph (see the module docstring).

    Shapes:
        x: (batch, 3, 32, 32) -> (batch, num_classes)
    """

    def __init__(
        self, arch: str, *, channels: int = 16, cells_per_stage: int = 5, num_classes: int = 10, seed: int = 0,
        as_run: bool = False,
    ) -> None:
        super().__init__()
        self.arch = arch
        self.as_run = as_run
        edges = parse_nb201(arch)
        meta = "meta"
        self.stem = nn.Sequential(
            nn.Conv2d(3, channels, 3, padding=1, bias=False, device=meta), nn.BatchNorm2d(channels, device=meta)
        )
        cells: list[nn.Module] = []
        c_prev = channels
        for stage in range(3):
            c = channels * 2**stage
            if stage > 0:
                cells.append(ResNetBasicBlock(c_prev, c, device=meta))
            cells.extend(NB201Cell(edges, c, device=meta, as_run=as_run) for _ in range(cells_per_stage))
            c_prev = c
        self.cells = nn.Sequential(*cells)
        self.lastact = nn.Sequential(nn.BatchNorm2d(c_prev, device=meta), nn.ReLU(inplace=False))
        self.global_pooling = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(c_prev, num_classes, device=meta)
        self.to_empty(device="cpu")
        _init_weights(self, torch.Generator().manual_seed(seed))
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.lastact(self.cells(self.stem(x)))
        return self.classifier(torch.flatten(self.global_pooling(x), 1))


@torch.no_grad()
def _init_weights(model: nn.Module, gen: torch.Generator) -> None:
    """He-normal convs, non-trivial BN statistics (so BN bugs show up in numeric checks), small linear."""
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            fan_in = m.in_channels * m.kernel_size[0] * m.kernel_size[1]
            m.weight.normal_(0.0, math.sqrt(2.0 / fan_in), generator=gen)
        elif isinstance(m, nn.BatchNorm2d):
            # every BN here tracks running statistics, so these buffers exist
            assert m.running_mean is not None and m.running_var is not None and m.num_batches_tracked is not None
            m.weight.uniform_(0.5, 1.5, generator=gen)
            m.bias.normal_(0.0, 0.1, generator=gen)
            m.running_mean.normal_(0.0, 0.1, generator=gen)
            m.running_var.uniform_(0.5, 1.5, generator=gen)
            m.num_batches_tracked.zero_()
        elif isinstance(m, nn.Linear):
            m.weight.normal_(0.0, 1.0 / math.sqrt(m.in_features), generator=gen)
            m.bias.zero_()
