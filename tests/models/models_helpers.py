"""Shared checks of graph cost models: output shapes, node-permutation invariance, batching consistency."""

from __future__ import annotations

import torch
from torch_geometric.data import Batch, Data

from tvm_cost.models import CostModel


def permute_nodes(data: Data, generator: torch.Generator) -> Data:
    """The same graph with nodes renumbered and edges reordered at random (all other fields kept)."""
    n, m = data.num_nodes, data.edge_index.shape[1]
    perm = torch.randperm(n, generator=generator)  # new node k is old node perm[k]
    inverse = torch.empty_like(perm)
    inverse[perm] = torch.arange(n)
    edge_order = torch.randperm(m, generator=generator)
    out = data.clone()
    out.x = data.x[perm]
    out.edge_index = inverse[data.edge_index[:, edge_order]]
    if getattr(data, "edge_attr", None) is not None:
        out.edge_attr = data.edge_attr[edge_order]
    return out


def assert_graph_model(model: CostModel, graphs: list[Data], *, atol: float = 1e-5,
                       deterministic_predict: bool = True) -> torch.Tensor:
    """Check the graph-level contract of `model` on `graphs`; return its batched output.

    - ``model(batch)`` is ``[G, heads]`` and finite;
    - each graph alone gives its row of the batched output;
    - renumbering nodes / reordering edges of every graph, and reordering graphs in the batch, change nothing
      but the row order;
    - ``score`` is minus the latency column; ``predict(samples=1)`` is the output with std 0 (for single models).
    """
    gen = torch.Generator().manual_seed(0)
    model.eval()
    heads = model.config.heads
    with torch.no_grad():
        out = model(Batch.from_data_list(graphs))
        assert out.shape == (len(graphs), len(heads)) and out.dtype == torch.float32
        assert torch.isfinite(out).all()
        singles = torch.cat([model(g) for g in graphs])
        torch.testing.assert_close(singles, out, atol=atol, rtol=1e-4)
        permuted = [permute_nodes(g, gen) for g in graphs]
        torch.testing.assert_close(model(Batch.from_data_list(permuted)), out, atol=atol, rtol=1e-4)
        order = torch.randperm(len(graphs), generator=gen)
        reordered = model(Batch.from_data_list([graphs[i] for i in order]))
        torch.testing.assert_close(reordered, out[order], atol=atol, rtol=1e-4)
        score = model.score(Batch.from_data_list(graphs))
        torch.testing.assert_close(score, -out[:, model.head_index()])
    mean, std = model.predict(Batch.from_data_list(graphs))
    assert mean.shape == std.shape == out.shape
    if deterministic_predict:
        torch.testing.assert_close(mean, out)
        assert (std == 0).all()
    return out
