"""Whole-graph GNNs on end-to-end items: train one, read its latency head, keep the latency label only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from tvm_cost.models import ModelKind


def train_graph_model(kind: ModelKind, train: Sequence[Any], val: Sequence[Any], *, seed: int, epochs: int,
                      heads: tuple[str, ...], batch_size: int = 16, patience: int = 40,
                      extra_node_columns: int = 0) -> Any:
    """A GNN (`kind` "seernet" or "gcn", hidden 64, 3 layers) trained on `train`, early-stopped on `val`.

    `extra_node_columns`: columns the items' `x` carries after the schema's node features (the hierarchical
    model's kernel predictions).
    """
    from tvm_cost.features.schema import SCHEMA
    from tvm_cost.models import ModelConfig, build_model
    from tvm_cost.train import TrainConfig, train as train_loop

    config = ModelConfig.for_schema(SCHEMA, hidden=64, layers=3, dropout=0.1, heads=heads, seed=seed)
    config = config.replace(node_dim=config.node_dim + extra_node_columns)
    model = build_model(kind=kind, config=config)
    train_loop(model, list(train), list(val) or None, config=TrainConfig(
        epochs=epochs, batch_size=batch_size, lr=2e-3, patience=patience, pcgrad=len(heads) > 1, seed=seed))
    model.eval()
    return model


def predict_latency_ms(model: Any, items: Sequence[Any]) -> np.ndarray:
    """The latency head of a trained GNN on `items`, in ms."""
    import torch
    from torch_geometric.loader import DataLoader

    preds = []
    with torch.no_grad():
        for batch in DataLoader(list(items), batch_size=64):
            preds.append(model(batch)[:, model.head_index("latency")].numpy())
    return np.exp(np.concatenate(preds))


def latency_only(items: Sequence[Any]) -> list[Any]:
    """Copies of e2e items whose `y` keeps the latency column only (what single-head models train on)."""
    out = []
    for d in items:
        c = d.clone()
        c.y = d.y[:, :1]
        out.append(c)
    return out
