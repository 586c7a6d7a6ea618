"""A plain multi-layer perceptron: `depth` hidden Linear+ReLU layers and a linear output.

The oldest baseline there is (Rumelhart, Hinton & Williams 1986, https://doi.org/10.1038/323533a0); here it gives
the data set pure dense layers at small and odd shapes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from tvm_cost.zoo._spec import FamilySpec, check_positive


class MLP(nn.Module):
    """Linear-ReLU x `depth`, then Linear to `num_classes`.

    Args:
        in_features: Input features.
        hidden: Hidden layer width.
        depth: Number of hidden layers.
        num_classes: Output features.

    Shapes:
        - input: `[batch, in_features]`
        - output: `[batch, num_classes]`
    """

    def __init__(self, in_features: int, hidden: int, depth: int, num_classes: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for i in range(depth):
            layers += [nn.Linear(in_features if i == 0 else hidden, hidden), nn.ReLU(inplace=True)]
        layers.append(nn.Linear(hidden if depth else in_features, num_classes))
        self.layers = nn.Sequential(*layers)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.layers(features)


def _check(cfg: Mapping[str, Any]) -> None:
    check_positive(cfg, "width", "depth", "in_features", "num_classes")


SPEC = FamilySpec(
    name="mlp",
    paper="https://doi.org/10.1038/323533a0",
    defaults={"width": 512, "depth": 3, "in_features": 784, "num_classes": 10},
    make=lambda cfg: MLP(cfg["in_features"], cfg["width"], cfg["depth"], cfg["num_classes"]),
    input_kind="features",
    check=_check,
)
