"""A BERT-style encoder: token + position + segment embeddings, post-norm transformer layers.

BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding, Devlin et al. 2018:
https://arxiv.org/abs/1810.04805 . Every token attends to every token (no padding mask); one segment.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from tvm_cost.zoo._spec import FamilySpec, check_positive, require
from tvm_cost.zoo.transformer import TransformerLayer


class BertEncoder(nn.Module):
    """BERT's embeddings and encoder stack (no pooler, no task head).

    Args:
        vocab_size: Token vocabulary size.
        seq_len: Sequence length (also the number of position embeddings).
        hidden: Model width (768 in BERT-base).
        depth: Number of transformer layers.
        heads: Attention heads (hidden must be divisible by heads).
        mlp_ratio: Feed-forward width as a multiple of `hidden`.

    Shapes:
        - input: `[batch, seq_len]` int64 token ids
        - output: `[batch, seq_len, hidden]`
    """

    def __init__(
        self, vocab_size: int, seq_len: int, hidden: int, depth: int, heads: int, mlp_ratio: float = 4.0
    ) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, hidden)
        self.position_embeddings = nn.Embedding(seq_len, hidden)
        self.token_type_embeddings = nn.Embedding(2, hidden)
        self.embed_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.register_buffer("position_ids", torch.arange(seq_len)[None], persistent=False)
        mlp = int(hidden * mlp_ratio)
        self.layers = nn.ModuleList(
            TransformerLayer(hidden, heads, mlp, norm_first=False, eps=1e-12) for _ in range(depth)
        )

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        x = self.word_embeddings(input_ids) + self.position_embeddings(self.position_ids)
        x = self.embed_norm(x + self.token_type_embeddings.weight[0])  # every token in segment 0
        for layer in self.layers:
            x = layer(x)
        return x


def check_text(cfg: Mapping[str, Any]) -> None:
    """Constraints shared by the token-input families."""
    check_positive(cfg, "width", "depth", "heads", "seq_len", "vocab_size", "mlp_ratio")
    require(cfg["width"] % cfg["heads"] == 0, f"width {cfg['width']} is not divisible by heads {cfg['heads']}")


SPEC = FamilySpec(
    name="bert",
    paper="https://arxiv.org/abs/1810.04805",
    defaults={"width": 256, "depth": 4, "heads": 4, "seq_len": 128, "vocab_size": 30522, "mlp_ratio": 4.0},
    make=lambda cfg: BertEncoder(
        cfg["vocab_size"], cfg["seq_len"], cfg["width"], cfg["depth"], cfg["heads"], cfg["mlp_ratio"]
    ),
    input_kind="tokens",
    check=check_text,
)
