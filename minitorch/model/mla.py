"""Multi-head Latent Attention (MLA): cache one low-rank latent per token, not K and V.

DeepSeek-V2 (section 2.1.2) compresses keys and values jointly:

    c_KV = W_DKV h  (d_c),   k_C = W_UK c_KV,   v_C = W_UV c_KV   (n_h d_h each)
    c_Q  = W_DQ h   (d_c'),  q_C = W_UQ c_Q

RoPE would sit between W_UK and the query and stop the absorption below, so positions are
**decoupled** (section 2.1.3): a per-head rotary query q_R = RoPE(W_QR c_Q)
(n_h d_h^R) and one rotary key k_R = RoPE(W_KR h) (d_h^R) **shared by all heads**; head i
scores [q_C,i; q_R,i] . [k_C,i; k_R] / sqrt(d_h + d_h^R) and u = W_O [o_1; ...; o_n_h].

The cache holds only c_KV and k_R: (d_c + d_h^R) elements per token and layer, against
2 n_h d_h for MHA, 2 n_g d_h for GQA and 2 d_h for MQA (the paper's KV-cache comparison).
**Absorption**: since
q_C,i . k_C,i = (W_UK,i^T q_C,i) . c_KV, the query is mapped into the latent space and
attends over c_KV directly; and W_O,i W_UV,i is one (d, d_c) matrix applied to the
attention-weighted latent. :func:`mla_absorbed` computes from (c_KV, k_R) only and
equals :func:`mla_naive` to float64 rounding.

    cfg = MLAConfig(d_model=32, n_head=4, head_dim=8, d_c=8, d_cq=16, rope_dim=4)
    w = init_mla(cfg, seed=0)
    y = mla_naive(h, w, cfg)            # h: (T, d_model) -> (T, d_model), causal
    y2 = mla_absorbed(h, w, cfg)        # the same, from the compressed cache

Lab: 34_speculative_decoding
Paper: DeepSeek-AI, "DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts
Language Model", arXiv:2405.04434, section 2.1 (equation and table numbers left out: not checked)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from minitorch.autograd import Tensor
from minitorch.model.positions import apply_rope, rope_tables

__all__ = [
    "MLAConfig",
    "init_mla",
    "kv_elements_per_token",
    "mla_absorbed",
    "mla_cache",
    "mla_naive",
]


@dataclass(frozen=True)
class MLAConfig:
    d_model: int = 32
    n_head: int = 4
    head_dim: int = 8  # d_h
    d_c: int = 8  # KV latent width
    d_cq: int = 16  # query latent width d_c'
    rope_dim: int = 4  # d_h^R (0: no decoupled RoPE part)
    rope_base: float = 10000.0

    def __post_init__(self) -> None:
        if self.rope_dim % 2:
            raise ValueError("RoPE rotates pairs: rope_dim must be even")


def init_mla(cfg: MLAConfig, seed: int = 0) -> dict[str, np.ndarray]:
    """Weights (out, in), float64, N(0, 1/in): W_DKV, W_UK, W_UV, W_DQ, W_UQ, W_QR, W_KR, W_O."""
    rng = np.random.default_rng(seed)
    d, h, dh, dr = cfg.d_model, cfg.n_head, cfg.head_dim, cfg.rope_dim
    shapes = {
        "W_DKV": (cfg.d_c, d),
        "W_UK": (h * dh, cfg.d_c),
        "W_UV": (h * dh, cfg.d_c),
        "W_DQ": (cfg.d_cq, d),
        "W_UQ": (h * dh, cfg.d_cq),
        "W_QR": (h * dr, cfg.d_cq),
        "W_KR": (dr, d),
        "W_O": (d, h * dh),
    }
    return {k: rng.standard_normal(s) / np.sqrt(s[1]) for k, s in shapes.items()}


def _rope(x: np.ndarray, positions: np.ndarray, base: float) -> np.ndarray:
    """The course RoPE (minitorch.model.positions) at explicit positions: x (..., T, d)."""
    if x.shape[-1] == 0:
        return x
    cos, sin = rope_tables(int(positions.max()) + 1, x.shape[-1], base, np.float64)
    return apply_rope(Tensor(x), cos[positions], sin[positions]).data


def _softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _queries(
    h: np.ndarray, w: dict[str, np.ndarray], cfg: MLAConfig, pos: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """q_C (H, T, d_h) and q_R (H, T, d_h^R) from h (T, d)."""
    t = h.shape[0]
    c_q = h @ w["W_DQ"].T  # (T, d_c')
    q_c = (c_q @ w["W_UQ"].T).reshape(t, cfg.n_head, cfg.head_dim).transpose(1, 0, 2)
    q_r = (c_q @ w["W_QR"].T).reshape(t, cfg.n_head, cfg.rope_dim).transpose(1, 0, 2)
    return q_c, _rope(q_r, pos, cfg.rope_base)


def mla_cache(
    h: np.ndarray, w: dict[str, np.ndarray], cfg: MLAConfig, start: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """What MLA caches for tokens h (T, d) at positions start..: c_KV (T, d_c), k_R (T, d_h^R)."""
    pos = np.arange(start, start + h.shape[0])
    return h @ w["W_DKV"].T, _rope(h @ w["W_KR"].T, pos, cfg.rope_base)


def _mask(tq: int, tk: int) -> np.ndarray:
    """Causal: the tq queries are the last tq of tk positions."""
    return np.triu(np.full((tq, tk), -np.inf), k=tk - tq + 1)


def mla_naive(h: np.ndarray, w: dict[str, np.ndarray], cfg: MLAConfig) -> np.ndarray:
    """Causal MLA over h (T, d) with K and V materialised per head (section 2.1)."""
    t, nh, dh = h.shape[0], cfg.n_head, cfg.head_dim
    pos = np.arange(t)
    c_kv, k_r = mla_cache(h, w, cfg)
    k_c = (c_kv @ w["W_UK"].T).reshape(t, nh, dh).transpose(1, 0, 2)  # (H, T, d_h)
    v_c = (c_kv @ w["W_UV"].T).reshape(t, nh, dh).transpose(1, 0, 2)
    q_c, q_r = _queries(h, w, cfg, pos)
    q = np.concatenate([q_c, q_r], axis=-1)  # (H, T, d_h + d_h^R)
    k = np.concatenate([k_c, np.broadcast_to(k_r, (nh, t, cfg.rope_dim))], axis=-1)
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(dh + cfg.rope_dim) + _mask(t, t)
    o = _softmax(scores) @ v_c  # (H, T, d_h)
    return o.transpose(1, 0, 2).reshape(t, nh * dh) @ w["W_O"].T


def mla_absorbed(
    h: np.ndarray,
    w: dict[str, np.ndarray],
    cfg: MLAConfig,
    cache: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """MLA for the queries h (Tq, d) reading only the latent cache (c_KV, k_R) of all Tk
    tokens (the queries' own included: by default the cache of h itself)."""
    nh, dh, dc = cfg.n_head, cfg.head_dim, cfg.d_c
    c_kv, k_r = cache if cache is not None else mla_cache(h, w, cfg)
    tq, tk = h.shape[0], c_kv.shape[0]
    q_c, q_r = _queries(h, w, cfg, np.arange(tk - tq, tk))
    w_uk = w["W_UK"].reshape(nh, dh, dc)  # per head (d_h, d_c)
    q_lat = q_c @ w_uk  # (H, Tq, d_c): W_UK,i^T q_C,i, absorbed into the query
    scores = q_lat @ c_kv.T + q_r @ k_r.T  # (H, Tq, Tk)
    a = _softmax(scores / np.sqrt(dh + cfg.rope_dim) + _mask(tq, tk))
    lat = a @ c_kv  # (H, Tq, d_c)
    w_ov = np.einsum("dhk,hkc->hdc", w["W_O"].reshape(-1, nh, dh), w["W_UV"].reshape(nh, dh, dc))
    return np.einsum("htc,hdc->td", lat, w_ov)  # W_O,i W_UV,i absorbed into the output


def kv_elements_per_token(
    kind: str, n_head: int, head_dim: int, n_group: int = 1, d_c: int = 0, rope_dim: int = 0
) -> int:
    """KV cache elements per token per layer (DeepSeek-V2's KV-cache comparison, section 2.1)."""
    table = {
        "mha": 2 * n_head * head_dim,
        "gqa": 2 * n_group * head_dim,
        "mqa": 2 * head_dim,
        "mla": d_c + rope_dim,
    }
    return table[kind]
