"""ResNet-18/34/50, layer for layer as torchvision builds them (so parameter names, counts and FLOPs match).

Deep Residual Learning for Image Recognition, He et al. 2015: https://arxiv.org/abs/1512.03385
(the bottleneck puts its stride on the 3x3 conv, "ResNet v1.5", as torchvision does).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from tvm_cost.zoo._spec import FamilySpec, check_positive, make_divisible, require

PAPER = "https://arxiv.org/abs/1512.03385"
#: Blocks per stage and the block type, by depth.
LAYOUTS: dict[int, tuple[str, tuple[int, int, int, int]]] = {
    18: ("basic", (2, 2, 2, 2)),
    34: ("basic", (3, 4, 6, 3)),
    50: ("bottleneck", (3, 4, 6, 3)),
}


def _conv(cin: int, cout: int, kernel: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, kernel, stride=stride, padding=kernel // 2, bias=False)


class BasicBlock(nn.Module):
    """Two 3x3 convs with a residual connection (ResNet-18/34)."""

    expansion = 1

    def __init__(self, cin: int, planes: int, stride: int = 1, downsample: nn.Module | None = None) -> None:
        super().__init__()
        self.conv1 = _conv(cin, planes, 3, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = _conv(planes, planes, 3)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (strided), 1x1 expand by 4, with a residual connection (ResNet-50)."""

    expansion = 4

    def __init__(self, cin: int, planes: int, stride: int = 1, downsample: nn.Module | None = None) -> None:
        super().__init__()
        self.conv1 = _conv(cin, planes, 1)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = _conv(planes, planes, 3, stride)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = _conv(planes, planes * self.expansion, 1)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    """The ImageNet ResNet: 7x7/2 stem, 3x3/2 max pool, four stages, global average pool, fc.

    Args:
        depth: 18, 34 or 50.
        width: Multiplier on every stage's channel count (1.0 is the paper's 64-128-256-512), rounded to 8s.
        num_classes: Size of the classifier output.

    Shapes:
        - input: `[batch, 3, H, W]`
        - output: `[batch, num_classes]`
    """

    def __init__(self, depth: int = 18, width: float = 1.0, num_classes: int = 1000) -> None:
        super().__init__()
        kind, blocks = LAYOUTS[depth]
        block: type[BasicBlock] | type[Bottleneck] = BasicBlock if kind == "basic" else Bottleneck
        planes = [make_divisible(c * width) for c in (64, 128, 256, 512)]
        self.inplanes = planes[0]
        self.conv1 = nn.Conv2d(3, self.inplanes, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._stage(block, planes[0], blocks[0], 1)
        self.layer2 = self._stage(block, planes[1], blocks[1], 2)
        self.layer3 = self._stage(block, planes[2], blocks[2], 2)
        self.layer4 = self._stage(block, planes[3], blocks[3], 2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(planes[3] * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def _stage(self, block: type[BasicBlock] | type[Bottleneck], planes: int, n: int, stride: int) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                _conv(self.inplanes, planes * block.expansion, 1, stride), nn.BatchNorm2d(planes * block.expansion)
            )
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes) for _ in range(1, n)]
        return nn.Sequential(*layers)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(images))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def _check(cfg: Mapping[str, Any]) -> None:
    check_positive(cfg, "width", "num_classes")
    require(cfg["resolution"] >= 32, f"resolution must be >= 32, got {cfg['resolution']}")


def _spec(depth: int) -> FamilySpec:
    return FamilySpec(
        name=f"resnet{depth}",
        paper=PAPER,
        defaults={"width": 1.0, "resolution": 224, "num_classes": 1000},
        make=lambda cfg: ResNet(depth, cfg["width"], cfg["num_classes"]),
        input_kind="images",
        check=_check,
    )


SPECS = (_spec(18), _spec(34), _spec(50))
