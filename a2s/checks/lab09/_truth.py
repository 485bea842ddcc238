"""Lab 09's trusted side, shared by its graders: tables of array cases compared with a torch truth,
and a torch twin of :class:`minitorch.model.gpt.GPT`, written independently from the paper
formulas (complex-number RoPE, ALiBi slopes, RMSNorm, SwiGLU), for tests and graders.

    tm = to_torch(model)              # torch module with the same weights (float64 by default)
    from_torch(tm, model)             # copy torch weights back into the course model

Lab: 09_transformer
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from a2s.checks.cases import Case
from a2s.checks.compare import float_array
from a2s.checks.table import Table
from minitorch.model.config import GPTConfig

__all__ = [
    "TorchGPT",
    "array_table",
    "from_torch",
    "to_torch",
    "torch_alibi_slopes",
    "torch_rope",
]


def _same(got: Any, want: Any) -> bool:
    g = np.asarray(got, dtype=np.float64)
    w = np.asarray(want, dtype=np.float64)
    return g.shape == w.shape and bool(np.allclose(g, w, rtol=1e-6, atol=1e-8))


_FLOAT32 = (
    "Close, but not to 1e-6 relative: compute in float64 (no float32 casts or constants "
    "rounded to a few digits)."
)


def _message(what: str, truth: str) -> Callable[[Case, Any, Any, str], str]:
    def message(case: Case, got: Any, want: Any, hint: str) -> str:
        g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
        if g.shape != w.shape:
            return f"[{case.label}] {what} has shape {g.shape}, expected {w.shape}. {hint}".strip()
        nans = int(np.isnan(g).sum() - np.isnan(w).sum())
        if nans > 0:
            return f"[{case.label}] {what} has {nans} NaN values where {truth} has numbers. {hint}"
        err = float(np.nanmax(np.abs(g - w))) if g.size else 0.0
        if not hint and err < 1e-4 * (1 + float(np.abs(w).max(initial=0.0))):
            hint = _FLOAT32
        return (
            f"[{case.label}] {what} differs from {truth} (max abs error {err:.3g}). {hint}".strip()
        )

    return message


def array_table(exercise: str, what: str, against: str = "torch", **fields: Any) -> Table:
    """A table of array cases: every answer within 1e-6 relative of the truth (float64), the
    failure naming the shape, the NaNs or the largest error against the truth named ``against``."""
    return Table(
        exercise,
        what=what,
        same=_same,
        read=lambda got, label: float_array(got, label, what),
        message=_message(what, against),
        **fields,
    )


def torch_rope(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """x (..., T, d): pairs (2i, 2i+1) as complex numbers times exp(j m theta_i)."""
    t, d = x.shape[-2:]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    m = torch.arange(t, dtype=torch.float64)
    rot = torch.polar(torch.ones(t, d // 2, dtype=torch.float64), torch.outer(m, theta))
    z = torch.view_as_complex(x.to(torch.float64).reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(z * rot).reshape(x.shape).to(x.dtype)


def torch_alibi_slopes(n: int) -> torch.Tensor:
    """Press et al. 2022: 2^(-8 k / n) for k = 1..n; non-powers of two interleave 2n's."""

    def geo(m: int) -> list[float]:
        return [2.0 ** (-8.0 * k / m) for k in range(1, m + 1)]

    p = 2 ** int(math.log2(n))
    s = geo(p) if p == n else geo(p) + geo(2 * p)[::2][: n - p]
    return torch.tensor(s, dtype=torch.float64)


class _Norm(nn.Module):
    def __init__(self, kind: str, c: int, eps: float) -> None:
        super().__init__()
        self.kind, self.eps = kind, eps
        self.weight = nn.Parameter(torch.ones(c))
        self.bias = nn.Parameter(torch.zeros(c)) if kind == "layernorm" else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "layernorm":
            return nn.functional.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class _Block(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        c, hd, f = cfg.d_model, cfg.head_dim, cfg.ff_dim
        self.cfg = cfg
        self.norm1 = _Norm(cfg.norm, c, cfg.norm_eps)
        self.norm2 = _Norm(cfg.norm, c, cfg.norm_eps)
        self.attn = nn.Module()
        self.attn.q_proj = nn.Linear(c, cfg.n_head * hd, bias=False)
        self.attn.k_proj = nn.Linear(c, cfg.n_kv_head * hd, bias=False)
        self.attn.v_proj = nn.Linear(c, cfg.n_kv_head * hd, bias=False)
        self.attn.o_proj = nn.Linear(cfg.n_head * hd, c, bias=False)
        self.mlp = nn.Module()
        self.mlp.w1 = nn.Linear(c, f, bias=False)
        if cfg.mlp == "swiglu":
            self.mlp.w3 = nn.Linear(c, f, bias=False)
        self.mlp.w2 = nn.Linear(f, c, bias=False)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        cfg, a = self.cfg, self.attn
        b, t, _ = x.shape
        q = a.q_proj(x).view(b, t, cfg.n_head, -1).transpose(1, 2)
        k = a.k_proj(x).view(b, t, cfg.n_kv_head, -1).transpose(1, 2)
        v = a.v_proj(x).view(b, t, cfg.n_kv_head, -1).transpose(1, 2)
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        bias = torch.zeros(cfg.n_head, t, t, dtype=x.dtype)
        if cfg.pos == "rope":
            q, k = torch_rope(q, cfg.rope_base), torch_rope(k, cfg.rope_base)
        else:
            pos = torch.arange(t, dtype=torch.float64)
            rel = pos[None, :] - pos[:, None]  # j - i
            bias = (torch_alibi_slopes(cfg.n_head)[:, None, None] * rel).to(x.dtype)
        bias = bias.masked_fill(~mask, float("-inf"))
        y = nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=bias, enable_gqa=cfg.n_rep > 1
        )
        return a.o_proj(y.transpose(1, 2).reshape(b, t, -1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x))
        h = self.norm2(x)
        m = self.mlp
        if self.cfg.mlp == "swiglu":
            return x + m.w2(nn.functional.silu(m.w1(h)) * m.w3(h))
        return x + m.w2(nn.functional.gelu(m.w1(h)))


class TorchGPT(nn.Module):
    """Same parameter names and shapes as the course GPT."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.blocks = nn.Sequential(*(_Block(cfg) for _ in range(cfg.n_layer)))
        self.norm_f = _Norm(cfg.norm, cfg.d_model, cfg.norm_eps)
        if not cfg.tie_head:
            self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        h = self.norm_f(self.blocks(self.tok_emb(idx)))
        return h @ self.tok_emb.weight.T if self.cfg.tie_head else self.lm_head(h)


def to_torch(model: object, dtype: torch.dtype = torch.float64) -> TorchGPT:
    """A TorchGPT holding ``model``'s weights (strict: every name must match)."""
    tm = TorchGPT(model.config).to(dtype)  # type: ignore[attr-defined]
    state = {k: torch.from_numpy(np.array(v)).to(dtype) for k, v in model.state_dict().items()}  # type: ignore[attr-defined]
    tm.load_state_dict(state, strict=True)
    return tm


def from_torch(tm: TorchGPT, model: object) -> None:
    """Copy a TorchGPT's weights into the course ``model`` in place."""
    dtype = next(iter(model.state_dict().values())).dtype  # type: ignore[attr-defined]
    state = {k: v.detach().cpu().numpy().astype(dtype) for k, v in tm.state_dict().items()}
    model.load_state_dict(state)  # type: ignore[attr-defined]
