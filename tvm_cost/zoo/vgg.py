"""VGG-11/13/16/19: stacks of 3x3 convs and 2x2 max pools, with a smaller classifier than the paper's.

Very Deep Convolutional Networks for Large-Scale Image Recognition, Simonyan & Zisserman 2014:
https://arxiv.org/abs/1409.1556 . The conv stack is the paper's (configurations A, B, D, E); the classifier pools
to 1x1 and uses `fc_width`-wide hidden layers instead of 7x7x512 -> 4096 -> 4096 (a 100M-parameter constant that
would dominate every import and says little about kernels).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from tvm_cost.zoo._spec import FamilySpec, check_positive, make_divisible, require

PAPER = "https://arxiv.org/abs/1409.1556"
#: Conv output channels per layer, "M" for a 2x2 max pool, by depth (weight layers).
LAYOUTS: dict[int, tuple[int | str, ...]] = {
    11: (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"),
    13: (64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"),
    16: (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"),
    19: (64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"),
}


class VGG(nn.Module):
    """VGG with optional batch norm after each conv.

    Args:
        depth: 11, 13, 16 or 19.
        width: Multiplier on every conv's channel count, rounded to 8s.
        fc_width: Width of the two hidden classifier layers.
        batch_norm: 1 to put a BatchNorm after every conv (torchvision's `vggNN_bn`), 0 for the original.
        num_classes: Size of the classifier output.

    Shapes:
        - input: `[batch, 3, H, W]`, H and W at least 32 (five 2x2 pools)
        - output: `[batch, num_classes]`
    """

    def __init__(
        self, depth: int = 11, width: float = 1.0, fc_width: int = 512, batch_norm: int = 0, num_classes: int = 1000
    ) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        cin = 3
        for v in LAYOUTS[depth]:
            if v == "M":
                layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
                continue
            cout = make_divisible(int(v) * width)
            layers.append(nn.Conv2d(cin, cout, 3, padding=1))
            if batch_norm:
                layers.append(nn.BatchNorm2d(cout))
            layers.append(nn.ReLU(inplace=True))
            cin = cout
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.classifier = nn.Sequential(
            nn.Linear(cin, fc_width),
            nn.ReLU(inplace=True),
            nn.Dropout(),
            nn.Linear(fc_width, fc_width),
            nn.ReLU(inplace=True),
            nn.Dropout(),
            nn.Linear(fc_width, num_classes),
        )

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.avgpool(self.features(images)), 1))


def _check(cfg: Mapping[str, Any]) -> None:
    check_positive(cfg, "width", "fc_width", "num_classes")
    require(cfg["depth"] in LAYOUTS, f"vgg depth must be one of {sorted(LAYOUTS)}, got {cfg['depth']}")
    require(cfg["batch_norm"] in (0, 1), f"batch_norm must be 0 or 1, got {cfg['batch_norm']}")
    require(cfg["resolution"] >= 32, f"resolution must be >= 32, got {cfg['resolution']}")


SPEC = FamilySpec(
    name="vgg",
    paper=PAPER,
    defaults={"width": 1.0, "depth": 11, "resolution": 224, "fc_width": 512, "batch_norm": 0, "num_classes": 1000},
    make=lambda cfg: VGG(cfg["depth"], cfg["width"], cfg["fc_width"], cfg["batch_norm"], cfg["num_classes"]),
    input_kind="images",
    check=_check,
)
