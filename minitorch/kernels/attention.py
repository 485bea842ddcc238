"""Attention the standard way, and the online softmax that makes tiling it possible.

Standard attention with a scale ``s`` (default ``1/sqrt(d)``) and an optional causal mask:

    S = s Q K^T,   P = softmax(S) row by row,   O = P V,   L = logsumexp(S) row by row.

``naive_attention`` computes it on arrays; ``naive_attention_hbm`` runs it as three kernels
against an :class:`~minitorch.kernels.io_model.HBM`, writing the n x n matrices S and P out
and reading them back (Dao et al. Algorithm 0). The online softmax (Milakov & Gimelshein
2018) computes a row's maximum and normalizer in *one* pass over blocks,

    m' = max(m, max_j x_j),   l' = l e^{m - m'} + sum_j e^{x_j - m'},

so a softmax reads its input twice instead of three times, and attention can process K and V
block by block without ever holding a full row of S.

Lab: 08_fused_kernels_flash_attention
Paper: Milakov & Gimelshein 2018, Online normalizer calculation for softmax; Dao et al. 2022,
FlashAttention (Algorithm 0, standard attention).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from minitorch.kernels.io_model import HBM

__all__ = [
    "causal_mask",
    "naive_attention",
    "naive_attention_hbm",
    "online_softmax",
    "online_softmax_hbm",
]


def causal_mask(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """True where query ``rows[a]`` may *not* see key ``cols[b]`` (the key is in its future)."""
    return cols[None, :] > rows[:, None]


def naive_attention(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool = False, scale: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """q, k, v: (n, d) -> (O: (n, d), L: (n,) logsumexp of each row of the scaled scores)."""
    n, d = q.shape
    scale = 1.0 / np.sqrt(d) if scale is None else scale
    s = scale * (q @ k.T)  # (n, n)
    if causal:
        s = np.where(causal_mask(np.arange(n), np.arange(n)), -np.inf, s)
    m = s.max(axis=1, keepdims=True)
    p = np.exp(s - m)
    l = p.sum(axis=1, keepdims=True)
    return (p / l) @ v, (m + np.log(l))[:, 0]


def naive_attention_hbm(hbm: HBM, causal: bool = False, scale: float | None = None) -> None:
    """Standard attention as three HBM kernels: S = sQK^T; P = softmax(S); O = PV.

    Reads Q, K, V from ``hbm`` and writes S, P (n x n, allocated here) and O.
    """
    n, d = hbm.shape("Q")
    scale = 1.0 / np.sqrt(d) if scale is None else scale
    hbm.alloc("S", (n, n))
    hbm.alloc("P", (n, n))
    s = scale * (hbm.load("Q") @ hbm.load("K").T)  # kernel 1: matmul
    if causal:
        s = np.where(causal_mask(np.arange(n), np.arange(n)), -np.inf, s)
    hbm.store("S", s)
    s = hbm.load("S")  # kernel 2: softmax
    p = np.exp(s - s.max(axis=1, keepdims=True))
    hbm.store("P", p / p.sum(axis=1, keepdims=True))
    hbm.store("O", hbm.load("P") @ hbm.load("V"))  # kernel 3: matmul


def _online_stats(blocks: Iterable[np.ndarray], rows: int) -> tuple[np.ndarray, np.ndarray]:
    m = np.full(rows, -np.inf)
    l = np.zeros(rows)
    for x in blocks:
        m_new = np.maximum(m, x.max(axis=1))
        l = l * np.exp(m - m_new) + np.exp(x - m_new[:, None]).sum(axis=1)
        m = m_new
    return m, l


def online_softmax(x: np.ndarray, block: int) -> np.ndarray:
    """Softmax over the last axis of x: (r, n), the statistics in one pass over column blocks."""
    cols = [(j, min(j + block, x.shape[1])) for j in range(0, x.shape[1], block)]
    m, l = _online_stats((x[:, j0:j1] for j0, j1 in cols), x.shape[0])
    return np.exp(x - m[:, None]) / l[:, None]


def online_softmax_hbm(hbm: HBM, block: int) -> None:
    """Softmax of HBM array ``X`` (r, n) into ``Y``: reads X twice, writes Y once.

    Pass 1 keeps the running (m, l) of every row in SRAM; pass 2 normalizes block by block.
    """
    r, n = hbm.shape("X")
    cols = [slice(j, min(j + block, n)) for j in range(0, n, block)]
    m, l = _online_stats((hbm.load("X", cols=c) for c in cols), r)
    for c in cols:
        hbm.store("Y", np.exp(hbm.load("X", cols=c) - m[:, None]) / l[:, None], cols=c)
