"""The end-to-end comparison: GNNs and baselines trained on the same split, scored on held-out data in one run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tvm_cost.data.splits import Split
from tvm_cost.estimate.baselines import BoostedAggregates, LinearFlopsBytes
from tvm_cost.train.metrics import mape, share_within, spearman


def _scores(true_ms: np.ndarray, pred_ms: np.ndarray) -> dict[str, float]:
    return {"mape": float(mape(true_ms, pred_ms)), "within_10pct": float(share_within(true_ms, pred_ms)),
            "spearman": float(spearman(true_ms, pred_ms)), "n": int(len(true_ms))}


def _gnn(kind: str, train: Sequence[Any], val: Sequence[Any], *, seed: int, epochs: int, heads: tuple[str, ...]
         ) -> Any:
    from tvm_cost.features.schema import SCHEMA
    from tvm_cost.models import ModelConfig, build_model
    from tvm_cost.train import TrainConfig, train as train_loop

    config = ModelConfig.for_schema(SCHEMA, hidden=64, layers=3, dropout=0.1, heads=heads, seed=seed)
    model = build_model(kind=kind, config=config)
    train_loop(model, list(train), list(val) or None, config=TrainConfig(
        epochs=epochs, batch_size=16, lr=2e-3, patience=40, pcgrad=len(heads) > 1, seed=seed))
    model.eval()
    return model


def _gnn_predict_ms(model: Any, items: Sequence[Any]) -> np.ndarray:
    import torch
    from torch_geometric.loader import DataLoader

    preds = []
    with torch.no_grad():
        for batch in DataLoader(list(items), batch_size=64):
            preds.append(model(batch)[:, model.head_index("latency")].numpy())
    return np.exp(np.concatenate(preds))


def run_experiment(items: Sequence[Any], split: Split, *, seed: int = 0, epochs: int = 150,
                   heads: tuple[str, ...] = ("latency", "memory")) -> dict[str, dict[str, float]]:
    """Train every model on `split.train` (GNNs early-stop on `split.val`), score all on `split.test`.

    Returns:
        model name -> {"mape", "within_10pct", "spearman", "n"} on the test set.
    """
    train = [items[i] for i in split.train]
    val = [items[i] for i in split.val]
    test = [items[i] for i in split.test]
    true = np.array([d.latency_ms for d in test])
    results: dict[str, dict[str, float]] = {}
    results["linear_flops_bytes"] = _scores(true, LinearFlopsBytes().fit(train).predict(test))
    results["gbt_aggregates"] = _scores(true, BoostedAggregates(seed).fit(train + val).predict(test))
    for kind in ("gcn", "seernet"):
        model = _gnn(kind, train, val, seed=seed, epochs=epochs, heads=heads)
        results[kind] = _scores(true, _gnn_predict_ms(model, test))
    return results
