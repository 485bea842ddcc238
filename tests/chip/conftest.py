"""Shared fixtures of lab 31's reference tests: the tiny GPT's torch twin, two variants."""

from __future__ import annotations

import pytest
import torch

from a2s.checks.lab09._truth import to_torch
from minitorch.model.config import GPTConfig
from minitorch.model.gpt import GPT

# RoPE (complex numbers: two ops fall back) and ALiBi with LayerNorm and GELU (none does)
VARIANTS = {
    "rope": dict(norm="rmsnorm", mlp="swiglu", pos="rope", tie_head=True),
    "alibi": dict(norm="layernorm", mlp="gelu", pos="alibi", tie_head=False),
}


def twin(variant: str) -> torch.nn.Module:
    """A fresh float32 torch twin of a one-layer tiny GPT (vocab 16, d 16, GQA 2:1)."""
    cfg = GPTConfig(
        vocab_size=16,
        block_size=8,
        n_layer=1,
        n_head=2,
        n_kv_head=1,
        d_model=16,
        **VARIANTS[variant],
    )
    return to_torch(GPT(cfg, seed=0), torch.float32)


@pytest.fixture(params=sorted(VARIANTS))
def variant(request: pytest.FixtureRequest) -> str:
    return str(request.param)
