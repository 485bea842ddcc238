"""The pieces of a pre-norm transformer block: RMSNorm, the SwiGLU and GELU MLPs, the block.

    h = h + attn(norm1(h));  h = h + mlp(norm2(h))

RMSNorm scales by the root mean square only: y = x / sqrt(mean(x^2) + eps) * w (no mean
subtraction, no bias). SwiGLU is W2 (silu(W1 x) * W3 x), silu(z) = z sigmoid(z); the GELU
MLP is W2 gelu(W1 x), both without biases.

Lab: 09_transformer
Paper: Zhang & Sennrich 2019 (RMSNorm, arXiv:1910.07467); Shazeer 2020 (GLU variants,
arXiv:2002.05202)
"""

from __future__ import annotations

import math

import numpy as np

from minitorch.autograd import Tensor, gelu
from minitorch.model.attention import CausalSelfAttention
from minitorch.model.config import GPTConfig
from minitorch.nn import LayerNorm, Linear, Module, Parameter

__all__ = ["MLP", "Block", "RMSNorm", "make_norm", "rms_norm", "silu"]


def rms_norm(x: Tensor, weight: Tensor | None, eps: float = 1e-5) -> Tensor:
    """x (..., C) / sqrt(mean(x^2 over C) + eps) * weight (C,)."""
    y = x * ((x * x).mean(axis=-1, keepdims=True) + eps) ** -0.5
    return y if weight is None else y * weight


def silu(x: Tensor) -> Tensor:
    """z * sigmoid(z) (a.k.a. swish)."""
    return x * x.sigmoid()


class RMSNorm(Module):
    def __init__(self, dim: int, eps: float = 1e-5, dtype: type = np.float32) -> None:
        super().__init__()
        self.eps = eps
        self.weight = Parameter(np.ones(dim, dtype))

    def forward(self, x: Tensor) -> Tensor:
        return rms_norm(x, self.weight, self.eps)


def make_norm(config: GPTConfig, dtype: type = np.float32) -> Module:
    if config.norm == "rmsnorm":
        return RMSNorm(config.d_model, config.norm_eps, dtype)
    return LayerNorm(config.d_model, config.norm_eps, dtype=dtype)


class MLP(Module):
    """SwiGLU (``w1``, ``w3`` gate and up, ``w2`` down) or GELU (``w1`` up, ``w2`` down)."""

    def __init__(
        self, config: GPTConfig, rng: np.random.Generator, dtype: type = np.float32
    ) -> None:
        super().__init__()
        self.kind = config.mlp
        c, f = config.d_model, config.ff_dim

        def lin(n_in: int, n_out: int, std: float) -> Linear:
            layer = Linear(n_in, n_out, bias=False, rng=rng, dtype=dtype)
            layer.weight = Parameter((rng.standard_normal((n_out, n_in)) * std).astype(dtype))
            return layer

        self.w1 = lin(c, f, 0.02)
        if self.kind == "swiglu":
            self.w3 = lin(c, f, 0.02)
        self.w2 = lin(f, c, 0.02 / math.sqrt(2 * config.n_layer))

    def forward(self, x: Tensor) -> Tensor:
        if self.kind == "swiglu":
            return self.w2(silu(self.w1(x)) * self.w3(x))
        return self.w2(gelu(self.w1(x)))


class Block(Module):
    """Pre-norm residual block: attention then MLP, (B, T, C) -> (B, T, C)."""

    def __init__(
        self, config: GPTConfig, rng: np.random.Generator, dtype: type = np.float32
    ) -> None:
        super().__init__()
        self.norm1 = make_norm(config, dtype)
        self.attn = CausalSelfAttention(config, rng, dtype)
        self.norm2 = make_norm(config, dtype)
        self.mlp = MLP(config, rng, dtype)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))
