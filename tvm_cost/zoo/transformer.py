"""Transformer building blocks shared by the BERT, GPT and ViT families.

Attention is written out as matmul + softmax + matmul (no `nn.MultiheadAttention`, no
`scaled_dot_product_attention`) so both TVM importers see plain ops they support, and the graph shows the
kernels a compiler really runs. Attention Is All You Need, Vaswani et al. 2017: https://arxiv.org/abs/1706.03762
"""

from __future__ import annotations

import math

import torch
from torch import nn

#: Added to masked-out attention scores; finite so masked rows never turn into NaN.
MASK_VALUE = -1e9


def causal_mask(seq_len: int) -> torch.Tensor:
    """An additive mask that hides later positions: 0 on and below the diagonal, `MASK_VALUE` above.

    Shapes:
        - output: `[1, 1, seq_len, seq_len]`
    """
    upper = torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool), diagonal=1)
    return torch.zeros(seq_len, seq_len).masked_fill(upper, MASK_VALUE)[None, None]


class SelfAttention(nn.Module):
    """Multi-head self-attention with separate q/k/v projections and an optional additive mask.

    Args:
        hidden: Model width; must be divisible by `heads`.
        heads: Number of attention heads.
        mask: An additive `[1, 1, T, T]` mask (e.g. `causal_mask(T)`), kept as a buffer, or None.

    Shapes:
        - input: `[batch, T, hidden]`
        - output: `[batch, T, hidden]`
    """

    def __init__(self, hidden: int, heads: int, mask: torch.Tensor | None = None) -> None:
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.scale = 1.0 / math.sqrt(self.head_dim)
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, hidden)
        self.mask: torch.Tensor | None
        self.register_buffer("mask", mask, persistent=False)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        return x.reshape(b, t, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, h = x.shape
        q, k, v = self._split(self.query(x)), self._split(self.key(x)), self._split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) * self.scale
        if self.mask is not None:
            scores = scores + self.mask
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(b, t, h)
        return self.out(ctx)


class FeedForward(nn.Sequential):
    """Linear to `mlp` units, GELU, linear back to `hidden`.

    Args:
        hidden: Model width.
        mlp: Inner width (4 x hidden in BERT, GPT and ViT).
        gelu: "none" for exact (erf) GELU as in BERT/ViT, "tanh" for GPT-2's approximation.
    """

    def __init__(self, hidden: int, mlp: int, gelu: str = "none") -> None:
        super().__init__(nn.Linear(hidden, mlp), nn.GELU(approximate=gelu), nn.Linear(mlp, hidden))


class TransformerLayer(nn.Module):
    """Self-attention and feed-forward sublayers with residuals, post-norm (BERT) or pre-norm (GPT-2, ViT).

    Args:
        hidden: Model width.
        heads: Attention heads.
        mlp: Feed-forward inner width.
        norm_first: True for pre-norm (`x + f(LN(x))`), False for post-norm (`LN(x + f(x))`).
        mask: Optional additive attention mask (see `SelfAttention`).
        gelu: GELU flavour (see `FeedForward`).
        eps: LayerNorm epsilon.

    Shapes:
        - input: `[batch, T, hidden]`
        - output: `[batch, T, hidden]`
    """

    def __init__(
        self,
        hidden: int,
        heads: int,
        mlp: int,
        *,
        norm_first: bool,
        mask: torch.Tensor | None = None,
        gelu: str = "none",
        eps: float = 1e-5,
    ) -> None:
        super().__init__()
        self.norm_first = norm_first
        self.attention = SelfAttention(hidden, heads, mask)
        self.norm1 = nn.LayerNorm(hidden, eps=eps)
        self.mlp = FeedForward(hidden, mlp, gelu)
        self.norm2 = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.norm_first:
            x = x + self.attention(self.norm1(x))
            return x + self.mlp(self.norm2(x))
        x = self.norm1(x + self.attention(x))
        return self.norm2(x + self.mlp(x))
