"""DenseNet-BC as torchvision builds it: dense blocks that concatenate every earlier feature map, 1x1 transitions.

Densely Connected Convolutional Networks, Huang et al. 2016: https://arxiv.org/abs/1608.06993
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from tvm_cost.zoo._spec import FamilySpec, check_positive, require

PAPER = "https://arxiv.org/abs/1608.06993"
#: Layers per dense block of the paper's ImageNet models, by depth.
STANDARD_BLOCKS: dict[int, tuple[int, ...]] = {
    121: (6, 12, 24, 16),
    169: (6, 12, 32, 32),
    201: (6, 12, 48, 32),
    264: (6, 12, 64, 48),
}


def block_config(depth: int) -> tuple[int, int, int, int]:
    """Layers per dense block for a depth: the paper's for 121/169/201/264, else DenseNet-121's proportions.

    A depth counts weight layers: two convs per dense layer, the stem, three transitions and the classifier,
    so `depth = 2 * sum(blocks) + 5`.
    """
    if depth in STANDARD_BLOCKS:
        return STANDARD_BLOCKS[depth]  # type: ignore[return-value]
    layers = (depth - 5) // 2
    target = [layers * s / 58 for s in STANDARD_BLOCKS[121]]
    blocks = [max(1, int(t)) for t in target]
    while sum(blocks) < layers:  # largest remainder first
        blocks[max(range(4), key=lambda i: target[i] - blocks[i])] += 1
    while sum(blocks) > layers:
        blocks[max(range(4), key=lambda i: blocks[i])] -= 1
    return (blocks[0], blocks[1], blocks[2], blocks[3])


class DenseLayer(nn.Module):
    """BN-ReLU-1x1 conv (to `bn_size * growth` channels), BN-ReLU-3x3 conv (to `growth`), on the concatenation."""

    def __init__(self, cin: int, growth: int, bn_size: int = 4) -> None:
        super().__init__()
        self.norm1 = nn.BatchNorm2d(cin)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(cin, bn_size * growth, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth, growth, 3, padding=1, bias=False)

    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        x = torch.cat(features, 1)
        x = self.conv1(self.relu1(self.norm1(x)))
        return self.conv2(self.relu2(self.norm2(x)))


class DenseBlock(nn.ModuleDict):
    """`n` dense layers; each sees the block input and every earlier layer's output."""

    def __init__(self, n: int, cin: int, growth: int) -> None:
        super().__init__({f"denselayer{i + 1}": DenseLayer(cin + i * growth, growth) for i in range(n)})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = [x]
        for layer in self.values():
            features.append(layer(features))
        return torch.cat(features, 1)


class Transition(nn.Sequential):
    """BN-ReLU-1x1 conv halving the channels, then 2x2 average pool."""

    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.norm = nn.BatchNorm2d(cin)
        self.relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(cin, cout, 1, bias=False)
        self.pool = nn.AvgPool2d(kernel_size=2, stride=2)


class DenseNet(nn.Module):
    """DenseNet-BC for ImageNet-style inputs (compression 0.5, bottleneck width 4 x growth).

    Args:
        depth: Weight layers (121, 169, 201, 264, or any odd depth >= 13, split like DenseNet-121).
        width: Multiplier on the growth rate (32 at 1.0); the stem has twice the growth rate.
        num_classes: Size of the classifier output.

    Shapes:
        - input: `[batch, 3, H, W]`, H and W at least 32
        - output: `[batch, num_classes]`
    """

    def __init__(self, depth: int = 121, width: float = 1.0, num_classes: int = 1000) -> None:
        super().__init__()
        growth = max(4, round(32 * width))
        channels = 2 * growth
        self.features = nn.Sequential()
        self.features.add_module("conv0", nn.Conv2d(3, channels, 7, stride=2, padding=3, bias=False))
        self.features.add_module("norm0", nn.BatchNorm2d(channels))
        self.features.add_module("relu0", nn.ReLU(inplace=True))
        self.features.add_module("pool0", nn.MaxPool2d(kernel_size=3, stride=2, padding=1))
        blocks = block_config(depth)
        for i, n in enumerate(blocks):
            self.features.add_module(f"denseblock{i + 1}", DenseBlock(n, channels, growth))
            channels += n * growth
            if i != len(blocks) - 1:
                self.features.add_module(f"transition{i + 1}", Transition(channels, channels // 2))
                channels //= 2
        self.features.add_module("norm5", nn.BatchNorm2d(channels))
        self.classifier = nn.Linear(channels, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = nn.functional.relu(self.features(images))
        x = nn.functional.adaptive_avg_pool2d(x, (1, 1))
        return self.classifier(torch.flatten(x, 1))


def _check(cfg: Mapping[str, Any]) -> None:
    check_positive(cfg, "width", "num_classes")
    depth = cfg["depth"]
    require(depth >= 13 and depth % 2 == 1, f"densenet depth must be odd and >= 13 (2 * layers + 5), got {depth}")
    require(cfg["resolution"] >= 32, f"resolution must be >= 32, got {cfg['resolution']}")


SPEC = FamilySpec(
    name="densenet",
    paper=PAPER,
    defaults={"width": 1.0, "depth": 121, "resolution": 224, "num_classes": 1000},
    make=lambda cfg: DenseNet(cfg["depth"], cfg["width"], cfg["num_classes"]),
    input_kind="images",
    check=_check,
)
