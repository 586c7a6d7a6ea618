"""MLP-Mixer: patch embedding, then alternating token-mixing and channel-mixing MLPs, mean pool, linear head.

MLP-Mixer: An all-MLP Architecture for Vision, Tolstikhin et al. 2021: https://arxiv.org/abs/2105.01601
Defaults follow Mixer-S/16 at half its width and depth.
"""

from __future__ import annotations

import torch
from torch import nn

from tvm_cost.zoo._spec import FamilySpec
from tvm_cost.zoo.vit import check_patches


class MixerBlock(nn.Module):
    """Token mixing (an MLP across patches, per channel) then channel mixing (per patch), both pre-norm.

    Shapes:
        - input: `[batch, tokens, hidden]`
        - output: `[batch, tokens, hidden]`
    """

    def __init__(self, tokens: int, hidden: int, tokens_mlp: int, channels_mlp: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(hidden, eps=1e-6)
        self.token_mlp = nn.Sequential(nn.Linear(tokens, tokens_mlp), nn.GELU(), nn.Linear(tokens_mlp, tokens))
        self.norm2 = nn.LayerNorm(hidden, eps=1e-6)
        self.channel_mlp = nn.Sequential(nn.Linear(hidden, channels_mlp), nn.GELU(), nn.Linear(channels_mlp, hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.token_mlp(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.norm2(x))


class MlpMixer(nn.Module):
    """MLP-Mixer classifier.

    Args:
        resolution: Input height and width; a multiple of `patch`.
        patch: Patch size.
        hidden: Channels per patch (512 in Mixer-S).
        depth: Number of Mixer blocks.
        tokens_mlp_ratio: Token-mixing MLP width as a multiple of `hidden` (0.5 in the paper's models).
        channels_mlp_ratio: Channel-mixing MLP width as a multiple of `hidden` (4 in the paper's models).
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
        tokens_mlp_ratio: float = 0.5,
        channels_mlp_ratio: float = 4.0,
        num_classes: int = 1000,
    ) -> None:
        super().__init__()
        tokens = (resolution // patch) ** 2
        self.stem = nn.Conv2d(3, hidden, patch, stride=patch)
        tokens_mlp, channels_mlp = max(1, int(hidden * tokens_mlp_ratio)), max(1, int(hidden * channels_mlp_ratio))
        self.blocks = nn.Sequential(*(MixerBlock(tokens, hidden, tokens_mlp, channels_mlp) for _ in range(depth)))
        self.norm = nn.LayerNorm(hidden, eps=1e-6)
        self.head = nn.Linear(hidden, num_classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.stem(images).flatten(2).transpose(1, 2)  # [batch, tokens, hidden]
        x = self.norm(self.blocks(x))
        return self.head(x.mean(dim=1))


SPEC = FamilySpec(
    name="mlp_mixer",
    paper="https://arxiv.org/abs/2105.01601",
    defaults={
        "width": 256,
        "depth": 4,
        "patch": 16,
        "resolution": 224,
        "tokens_mlp_ratio": 0.5,
        "channels_mlp_ratio": 4.0,
        "num_classes": 1000,
    },
    make=lambda cfg: MlpMixer(
        cfg["resolution"],
        cfg["patch"],
        cfg["width"],
        cfg["depth"],
        cfg["tokens_mlp_ratio"],
        cfg["channels_mlp_ratio"],
        cfg["num_classes"],
    ),
    input_kind="images",
    check=check_patches,
)
