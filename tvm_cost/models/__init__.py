"""Graph cost models: pure torch + PyG, never tvm (they consume feature arrays and PyG `Data` only)."""

from __future__ import annotations

from typing import Literal

from tvm_cost.models.base import GraphCostModel, graph_inputs
from tvm_cost.models.config import ModelConfig
from tvm_cost.models.ensemble import EnsembleModel
from tvm_cost.models.gcn import GCNBaseline
from tvm_cost.models.kernel_sum import KernelSumNet
from tvm_cost.models.normalization import feature_stats
from tvm_cost.models.seeding import isolated_rng
from tvm_cost.models.seernet import SeerNet
from tvm_cost.models.synthetic import synthetic_graphs

ModelKind = Literal["seernet", "gcn", "kernel_sum"]
CostModel = GraphCostModel | EnsembleModel
"""Any model of this package: same `forward`/`predict`/`score`/`fit_normalization` contract and a `config`."""
MODEL_KINDS: dict[str, type[GraphCostModel]] = {"seernet": SeerNet, "gcn": GCNBaseline,
                                                 "kernel_sum": KernelSumNet}
MODEL_CLASSES: dict[str, type[GraphCostModel] | type[EnsembleModel]] = {
    "SeerNet": SeerNet, "GCNBaseline": GCNBaseline, "KernelSumNet": KernelSumNet, "EnsembleModel": EnsembleModel}
"""Classes a checkpoint may name (by class name); anything else is refused on load."""


def build_model(*, kind: ModelKind | CostModel = "seernet", config: ModelConfig, ensemble: int = 1) -> CostModel:
    """A model of `kind` ("seernet", "gcn" or "kernel_sum"), or an `EnsembleModel` of `ensemble` such members.

    A model of this package passed as `kind` is returned as is. An unknown kind raises `ValueError` listing the
    choices.
    """
    if isinstance(kind, (GraphCostModel, EnsembleModel)):
        return kind
    if kind not in MODEL_KINDS:
        raise ValueError(f"unknown model kind {kind!r}; choices: {', '.join(MODEL_KINDS)}")
    if ensemble > 1:
        return EnsembleModel(config, kind=kind, size=ensemble)
    return MODEL_KINDS[kind](config)


__all__ = [
    "MODEL_CLASSES",
    "MODEL_KINDS",
    "CostModel",
    "EnsembleModel",
    "GCNBaseline",
    "GraphCostModel",
    "KernelSumNet",
    "ModelConfig",
    "ModelKind",
    "SeerNet",
    "build_model",
    "feature_stats",
    "graph_inputs",
    "isolated_rng",
    "synthetic_graphs",
]
