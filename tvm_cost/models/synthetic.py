"""Tiny synthetic graphs with a learnable target, for tests and smoke runs (like PyG's `FakeDataset`)."""

from __future__ import annotations

import math

import torch
from torch_geometric.data import Data


def _target_weights(dims: tuple[int, int, int], heads: int, task_seed: int) -> list[tuple[torch.Tensor, ...]]:
    gen = torch.Generator().manual_seed(task_seed)
    return [tuple(torch.randn(d, generator=gen) / math.sqrt(max(d, 1)) for d in dims) for _ in range(heads)]


def synthetic_graphs(num_graphs: int, *, node_dim: int = 8, edge_dim: int = 3, global_dim: int = 4,
                     heads: tuple[str, ...] = ("latency",), num_groups: int = 4, min_nodes: int = 2,
                     max_nodes: int = 8, raw_scale: bool = True, seed: int = 0, task_seed: int = 0) -> list[Data]:
    """Random DAGs whose positive targets are a fixed, permutation-invariant function of their features.

    For head ``k`` with fixed weights ``(a_k, b_k, c_k)`` (drawn from `task_seed`, so graphs from different
    `seed`s share one target function)::

        log y_k = logsumexp_i(x_i . a_k) + 0.5 * mean_edges tanh(e . b_k) + 0.5 * u . c_k

    computed on standard-normal features; with `raw_scale` the stored columns are then scaled by factors in
    [0.1, 1000] and shifted, like raw feature arrays, so models must standardize them.

    Args:
        num_graphs: How many graphs.
        node_dim, edge_dim, global_dim: Feature widths.
        heads: Metric names; `y` has one column per head.
        num_groups: Graph ``i`` gets ``group = i % num_groups`` (the id ranking losses and metrics group by).
        min_nodes, max_nodes: Node count range (inclusive).
        raw_scale: Scale and shift the stored features (see above).
        seed: Seed of the graphs.
        task_seed: Seed of the target function and of the column scales.

    Shapes:
        Each `Data`: x [n, node_dim], edge_index [2, m], edge_attr [m, edge_dim], u [1, global_dim],
        y [1, len(heads)] (positive), group [1] (int64).
    """
    gen = torch.Generator().manual_seed(seed)
    weights = _target_weights((node_dim, edge_dim, global_dim), len(heads), task_seed)
    scale_gen = torch.Generator().manual_seed(task_seed + 1)
    scales = [10 ** (torch.rand(d, generator=scale_gen) * 4 - 1) for d in (node_dim, edge_dim, global_dim)]
    shifts = [torch.randn(d, generator=scale_gen) * s for d, s in zip((node_dim, edge_dim, global_dim), scales)]
    graphs = []
    for i in range(num_graphs):
        n = int(torch.randint(min_nodes, max_nodes + 1, (1,), generator=gen))
        parents = [int(torch.randint(0, j, (1,), generator=gen)) for j in range(1, n)]
        src = torch.tensor(parents, dtype=torch.long)
        dst = torch.arange(1, n, dtype=torch.long)
        if n > 2:  # a few skip connections, like residual adds
            extra = torch.randint(0, n - 2, (n // 3,), generator=gen)
            src, dst = torch.cat([src, extra]), torch.cat([dst, extra + 2])
        edge_index = torch.stack([src, dst])
        x = torch.randn(n, node_dim, generator=gen)
        e = torch.randn(edge_index.shape[1], edge_dim, generator=gen)
        u = torch.randn(1, global_dim, generator=gen)
        logs = []
        for a, b, c in weights:
            edge_term = torch.tanh(e @ b).mean() if e.shape[0] else torch.tensor(0.0)
            logs.append(torch.logsumexp(x @ a, 0) + 0.5 * edge_term + 0.5 * (u @ c).squeeze())
        y = torch.stack(logs).exp().reshape(1, -1)
        if raw_scale:
            x, e, u = (t * s + sh for t, s, sh in zip((x, e, u), scales, shifts))
        graphs.append(Data(x=x, edge_index=edge_index, edge_attr=e, u=u, y=y,
                           group=torch.tensor([i % num_groups]), num_nodes=n))
    return graphs
