"""A GPT-2-style decoder: learned positions, pre-norm causal transformer layers, tanh-GELU, LM head.

Language Models are Unsupervised Multitask Learners (GPT-2), Radford et al. 2019:
https://cdn.openai.com/better-language-models/language_models_are_unsupervised_multitask_learners.pdf
The causal mask is a constant buffer built for `seq_len`; the LM head is not tied to the embeddings.
"""

from __future__ import annotations

import torch
from torch import nn

from tvm_cost.zoo._spec import FamilySpec
from tvm_cost.zoo.bert import check_text
from tvm_cost.zoo.transformer import TransformerLayer, causal_mask


class GPTDecoder(nn.Module):
    """GPT-2's decoder stack with its language-model head.

    Args:
        vocab_size: Token vocabulary size (also the logits' width).
        seq_len: Sequence length (also the number of position embeddings and the mask's size).
        hidden: Model width (768 in GPT-2 small).
        depth: Number of transformer layers.
        heads: Attention heads (hidden must be divisible by heads).
        mlp_ratio: Feed-forward width as a multiple of `hidden`.

    Shapes:
        - input: `[batch, seq_len]` int64 token ids
        - output: `[batch, seq_len, vocab_size]` logits
    """

    def __init__(
        self, vocab_size: int, seq_len: int, hidden: int, depth: int, heads: int, mlp_ratio: float = 4.0
    ) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab_size, hidden)
        self.wpe = nn.Embedding(seq_len, hidden)
        self.register_buffer("position_ids", torch.arange(seq_len)[None], persistent=False)
        mask = causal_mask(seq_len)
        mlp = int(hidden * mlp_ratio)
        self.layers = nn.ModuleList(
            TransformerLayer(hidden, heads, mlp, norm_first=True, mask=mask, gelu="tanh") for _ in range(depth)
        )
        self.ln_f = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab_size, bias=False)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        x = self.wte(input_ids) + self.wpe(self.position_ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.ln_f(x))


SPEC = FamilySpec(
    name="gpt",
    paper="https://cdn.openai.com/better-language-models/language_models_are_unsupervised_multitask_learners.pdf",
    defaults={"width": 256, "depth": 4, "heads": 4, "seq_len": 128, "vocab_size": 8192, "mlp_ratio": 4.0},
    make=lambda cfg: GPTDecoder(
        cfg["vocab_size"], cfg["seq_len"], cfg["width"], cfg["depth"], cfg["heads"], cfg["mlp_ratio"]
    ),
    input_kind="tokens",
    check=check_text,
)
