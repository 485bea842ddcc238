"""Causal self-attention: scaled dot products, the causal mask, and MHA / MQA / GQA heads.

    out = scaled_dot_product_attention(q, k, v)       # q, k, v: (B, H, T, d) -> (B, H, T, d)

softmax(q k^T / sqrt(d) + bias + mask) v, where the mask is -inf above the diagonal (a
query never sees a later key). :class:`CausalSelfAttention` projects x (B, T, C) to
``n_head`` query heads and ``n_kv_head`` key/value heads; each K/V head serves ``n_rep``
consecutive query heads (:func:`repeat_kv`), so the K/V cache of a decoder is
``n_head / n_kv_head`` times smaller than with MHA.

Lab: 09_transformer
Paper: Vaswani et al. 2017 (arXiv:1706.03762); Shazeer 2019 (MQA); Ainslie et al. 2023 (GQA)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from minitorch.autograd import Tensor, softmax
from minitorch.model.config import GPTConfig
from minitorch.model.positions import alibi_bias, apply_rope, rope_tables
from minitorch.nn import Linear, Module, Parameter

__all__ = ["CausalSelfAttention", "causal_mask", "repeat_kv", "scaled_dot_product_attention"]


def causal_mask(n_pos: int, dtype: Any = np.float32) -> np.ndarray:
    """(T, T) additive mask: 0 where key j <= query i, -inf above the diagonal."""
    return np.triu(np.full((n_pos, n_pos), -np.inf, dtype=dtype), k=1)


def scaled_dot_product_attention(
    q: Any, k: Any, v: Any, bias: np.ndarray | None = None, causal: bool = True
) -> Any:
    """softmax(q k^T / sqrt(d) + bias [+ causal mask]) v over the last two axes.

    q: (..., Tq, d), k: (..., Tk, d), v: (..., Tk, dv); bias broadcasts to (..., Tq, Tk).
    Tensors in, a Tensor out (differentiable); numpy arrays in, a numpy array out.
    """
    if not isinstance(q, Tensor):
        return scaled_dot_product_attention(Tensor(q), Tensor(k), Tensor(v), bias, causal).data
    d = q.shape[-1]
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))  # (..., Tq, Tk)
    add = np.zeros(scores.shape[-2:], dtype=q.dtype)
    if causal:
        tq, tk = scores.shape[-2:]
        add = add + causal_mask(tk, q.dtype)[tk - tq :]  # queries are the last Tq positions
    if bias is not None:
        add = add + bias.astype(q.dtype)
    return softmax(scores + add, axis=-1) @ v


def repeat_kv(x: Tensor, n_rep: int) -> Tensor:
    """(B, H_kv, T, d) -> (B, H_kv * n_rep, T, d): K/V head g serves query heads
    g * n_rep ... g * n_rep + n_rep - 1."""
    if n_rep == 1:
        return x
    index = np.repeat(np.arange(x.shape[1]), n_rep)
    return x[:, index]


def _normal(rng: np.random.Generator, shape: tuple[int, ...], std: float, dtype: type) -> Parameter:
    return Parameter((rng.standard_normal(shape) * std).astype(dtype))


class CausalSelfAttention(Module):
    """x (B, T, d_model) -> (B, T, d_model), with RoPE or ALiBi positions from ``config``."""

    def __init__(
        self, config: GPTConfig, rng: np.random.Generator, dtype: type = np.float32
    ) -> None:
        super().__init__()
        self.config = config
        c, hd = config.d_model, config.head_dim
        std = 0.02
        self.q_proj = Linear(c, config.n_head * hd, bias=False, rng=rng, dtype=dtype)
        self.k_proj = Linear(c, config.n_kv_head * hd, bias=False, rng=rng, dtype=dtype)
        self.v_proj = Linear(c, config.n_kv_head * hd, bias=False, rng=rng, dtype=dtype)
        self.o_proj = Linear(config.n_head * hd, c, bias=False, rng=rng, dtype=dtype)
        for lin in (self.q_proj, self.k_proj, self.v_proj):
            lin.weight = _normal(rng, lin.weight.shape, std, dtype)
        self.o_proj.weight = _normal(
            rng, self.o_proj.weight.shape, std / math.sqrt(2 * config.n_layer), dtype
        )

    def forward(self, x: Tensor) -> Tensor:
        cfg = self.config
        b, t, _ = x.shape
        hd = cfg.head_dim
        q = self.q_proj(x).reshape(b, t, cfg.n_head, hd).transpose(1, 2)  # (B, H, T, hd)
        k = self.k_proj(x).reshape(b, t, cfg.n_kv_head, hd).transpose(1, 2)  # (B, Hkv, T, hd)
        v = self.v_proj(x).reshape(b, t, cfg.n_kv_head, hd).transpose(1, 2)
        bias = None
        if cfg.pos == "rope":
            cos, sin = rope_tables(t, hd, cfg.rope_base, np.float64)
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        else:
            bias = alibi_bias(cfg.n_head, t, np.float64)  # (H, T, T)
        k, v = repeat_kv(k, cfg.n_rep), repeat_kv(v, cfg.n_rep)
        y = scaled_dot_product_attention(q, k, v, bias=bias, causal=True)  # (B, H, T, hd)
        return self.o_proj(y.transpose(1, 2).reshape(b, t, cfg.n_head * hd))
