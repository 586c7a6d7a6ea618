"""A Vision Transformer: patch-embedding conv, class token, learned positions, pre-norm encoder, linear head.

An Image is Worth 16x16 Words: Transformers for Image Recognition at Scale, Dosovitskiy et al. 2020:
https://arxiv.org/abs/2010.11929 . Defaults follow ViT-Ti/16 (DeiT-Tiny) at half its depth.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from tvm_cost.zoo._spec import FamilySpec, check_positive, require
from tvm_cost.zoo.transformer import TransformerLayer


class VisionTransformer(nn.Module):
    """ViT classifier reading the class token.

    Args:
        resolution: Input height and width; a multiple of `patch`.
        patch: Patch size (the patch-embedding conv's kernel and stride).
        hidden: Model width (192 for ViT-Ti, 768 for ViT-B).
        depth: Number of transformer layers.
        heads: Attention heads (hidden must be divisible by heads).
        mlp_ratio: Feed-forward width as a multiple of `hidden`.
        num_classes: Size of the classifier output.

    Shapes:
        - input: `[batch, 3, resolution, resolution]`
        - output: `[batch, num_classes]`
    """

    def __init__(
        self,
        resolution: int,
        patch: int,
        hidden: int,
        depth: int,
        heads: int,
        mlp_ratio: float = 4.0,
        num_classes: int = 1000,
    ) -> None:
        super().__init__()
        tokens = (resolution // patch) ** 2 + 1
        self.patch_embed = nn.Conv2d(3, hidden, patch, stride=patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, hidden))
        self.pos_embed = nn.Parameter(torch.randn(1, tokens, hidden) * 0.02)
        mlp = int(hidden * mlp_ratio)
        self.layers = nn.ModuleList(
            TransformerLayer(hidden, heads, mlp, norm_first=True, eps=1e-6) for _ in range(depth)
        )
        self.norm = nn.LayerNorm(hidden, eps=1e-6)
        self.head = nn.Linear(hidden, num_classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(images).flatten(2).transpose(1, 2)  # [batch, patches, hidden]
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1) + self.pos_embed
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x)[:, 0])


def check_patches(cfg: Mapping[str, Any]) -> None:
    """Constraints shared by the patch-based image families."""
    check_positive(cfg, "width", "depth", "patch", "resolution", "num_classes")
    require(
        cfg["resolution"] % cfg["patch"] == 0,
        f"resolution {cfg['resolution']} is not a multiple of patch {cfg['patch']}",
    )


def _check(cfg: Mapping[str, Any]) -> None:
    check_patches(cfg)
    check_positive(cfg, "heads", "mlp_ratio")
    require(cfg["width"] % cfg["heads"] == 0, f"width {cfg['width']} is not divisible by heads {cfg['heads']}")


SPEC = FamilySpec(
    name="vit",
    paper="https://arxiv.org/abs/2010.11929",
    defaults={
        "width": 192,
        "depth": 6,
        "heads": 3,
        "patch": 16,
        "resolution": 224,
        "mlp_ratio": 4.0,
        "num_classes": 1000,
    },
    make=lambda cfg: VisionTransformer(
        cfg["resolution"], cfg["patch"], cfg["width"], cfg["depth"], cfg["heads"], cfg["mlp_ratio"], cfg["num_classes"]
    ),
    input_kind="images",
    check=_check,
)
