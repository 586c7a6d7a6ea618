"""Shared fixtures: tiny torch models and small Relax modules, built once per session."""

from __future__ import annotations

import logging

import pytest
import torch
from torch import nn

logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)


class TinyConvNet(nn.Module):
    """conv-bn-relu, a residual add, a split into two heads: exercises fusion, tuples and fan-out."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.conv2(y) + y)
        return torch.softmax(self.fc(y.mean(dim=(2, 3))), dim=-1)


@pytest.fixture(scope="session")
def tiny_model() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    gen = torch.Generator().manual_seed(0)
    model = TinyConvNet().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
    return model, (torch.randn(2, 3, 16, 16, generator=gen),)


@pytest.fixture(scope="session")
def tiny_mod(tiny_model):
    from tvm_cost.importer import import_model

    model, inputs = tiny_model
    return import_model(model, example_inputs=inputs).mod
