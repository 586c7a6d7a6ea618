"""MobileNetV2 as torchvision builds it: inverted residuals with linear bottlenecks, depthwise 3x3 convs, ReLU6.

MobileNetV2: Inverted Residuals and Linear Bottlenecks, Sandler et al. 2018: https://arxiv.org/abs/1801.04381
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from tvm_cost.zoo._spec import FamilySpec, check_positive, make_divisible, require

PAPER = "https://arxiv.org/abs/1801.04381"
#: expansion t, output channels c, repeats n, first stride s (Table 2 of the paper).
SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))


def _conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1, act: bool = True) -> nn.Sequential:
    layers: list[nn.Module] = [
        nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
    ]
    if act:
        layers.append(nn.ReLU6(inplace=True))
    return nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    """1x1 expand, 3x3 depthwise, 1x1 linear projection; residual when shapes allow."""

    def __init__(self, cin: int, cout: int, stride: int, expand_ratio: int) -> None:
        super().__init__()
        hidden = round(cin * expand_ratio)
        self.use_res_connect = stride == 1 and cin == cout
        layers: list[nn.Module] = []
        if expand_ratio != 1:
            layers.append(_conv_bn(cin, hidden, 1))
        layers += [_conv_bn(hidden, hidden, 3, stride, groups=hidden), _conv_bn(hidden, cout, 1, act=False)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    """MobileNetV2 for ImageNet-style inputs.

    Args:
        width: Channel multiplier (the paper's alpha), rounded to 8s; the last conv keeps >= 1280 channels.
        depth: Multiplier on each stage's number of blocks (at least one block per stage).
        num_classes: Size of the classifier output.

    Shapes:
        - input: `[batch, 3, H, W]`
        - output: `[batch, num_classes]`
    """

    def __init__(self, width: float = 1.0, depth: float = 1.0, num_classes: int = 1000) -> None:
        super().__init__()
        cin = make_divisible(32 * width)
        self.last_channel = make_divisible(1280 * max(1.0, width))
        features: list[nn.Module] = [_conv_bn(3, cin, 3, stride=2)]
        for t, c, n, s in SETTINGS:
            cout = make_divisible(c * width)
            for i in range(max(1, round(n * depth))):
                features.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
                cin = cout
        features.append(_conv_bn(cin, self.last_channel, 1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(self.last_channel, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = nn.functional.adaptive_avg_pool2d(self.features(images), (1, 1))
        return self.classifier(torch.flatten(x, 1))


def _check(cfg: Mapping[str, Any]) -> None:
    check_positive(cfg, "width", "depth", "num_classes")
    require(cfg["resolution"] >= 32, f"resolution must be >= 32, got {cfg['resolution']}")


SPEC = FamilySpec(
    name="mobilenet_v2",
    paper=PAPER,
    defaults={"width": 1.0, "depth": 1.0, "resolution": 224, "num_classes": 1000},
    make=lambda cfg: MobileNetV2(cfg["width"], cfg["depth"], cfg["num_classes"]),
    input_kind="images",
    check=_check,
)
