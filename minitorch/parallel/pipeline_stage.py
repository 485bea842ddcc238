"""The tiny GPT cut into pipeline stages: embedding + first blocks, ..., last blocks + head.

``split_gpt(model, p)`` returns ``p`` :class:`GPTStage` modules that share the model's
parameters: stage 0 holds the token embedding, every stage a contiguous run of blocks (as
even as possible), the last stage the final norm and the output head. Running the stages one
after another equals ``model.forward``. The head must not be tied to the embedding (the two
would live on different stages): build the model with ``GPTConfig(tie_head=False)``.

    stages = split_gpt(GPT(GPTConfig(tie_head=False, n_layer=2), dtype=np.float64), 2)
    logits = stages[1](stages[0](ids))          # == model(ids)
    stages[1].loss(logits, targets)             # mean cross entropy

Lab: 25_pipeline_parallel
Paper: Huang et al., "GPipe: Efficient Training of Giant Neural Networks using Pipeline
Parallelism" (NeurIPS 2019): a sequential model cut into consecutive cells.
"""

from __future__ import annotations

import numpy as np

from minitorch.autograd import Tensor, cross_entropy
from minitorch.model.gpt import GPT
from minitorch.nn import Module, Sequential

__all__ = ["GPTStage", "split_gpt"]


class GPTStage(Module):
    """A contiguous piece of the tiny GPT: optional embedding, blocks, optional norm + head."""

    def __init__(self, model: GPT, first: int, stop: int, index: int, count: int) -> None:
        super().__init__()
        self.index, self.count = index, count
        if index == 0:
            self.tok_emb = model.tok_emb
        self.blocks = Sequential(*(model.blocks[i] for i in range(first, stop)))
        if index == count - 1:
            self.norm_f = model.norm_f
            self.lm_head = model.lm_head

    def forward(self, x: np.ndarray | Tensor) -> Tensor:
        """Token ids (B, T) on stage 0, else hidden states (B, T, C) -> this stage's output."""
        h = self.tok_emb(np.asarray(x)) if self.index == 0 else x
        h = self.blocks(h)
        if self.index == self.count - 1:
            h = self.lm_head(self.norm_f(h))
        return h  # type: ignore[return-value]

    def loss(self, logits: Tensor, targets: np.ndarray) -> Tensor:
        """Mean next-token cross entropy of the last stage's logits (B, T, V)."""
        return cross_entropy(logits, np.asarray(targets))


def split_gpt(model: GPT, p: int) -> list[GPTStage]:
    """Cut ``model`` into ``p`` stages of consecutive blocks (parameters shared)."""
    n = model.config.n_layer
    if model.config.tie_head:
        raise ValueError("a tied head lives on two stages: use GPTConfig(tie_head=False)")
    if not 1 <= p <= n:
        raise ValueError(f"need 1 <= p <= n_layer ({n}), got p={p}")
    bounds = [round(i * n / p) for i in range(p + 1)]
    return [GPTStage(model, bounds[i], bounds[i + 1], i, p) for i in range(p)]
