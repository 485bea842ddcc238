"""FlashAttention forward and backward: tiled exact attention that never writes S or P to HBM.

Forward (query blocks outside, key/value blocks inside, as FlashAttention-2 orders them): a
query tile Q_i stays in SRAM with running statistics (m, l) and an unnormalized output
accumulator; each K_j, V_j tile updates them by the online softmax,

    S = s Q_i K_j^T,  m' = max(m, rowmax S),  P = e^{S - m'},
    l' = e^{m - m'} l + rowsum P,  acc' = e^{m - m'} acc + P V_j,

and at the end O_i = acc / l and L_i = m + log l (the logsumexp, saved for the backward).
With ``causal`` a query block skips the key blocks that lie wholly in its future.

Backward (key/value blocks outside): P is *recomputed* from Q_i, K_j and the saved L_i,
P = e^{s Q_i K_j^T - L_i}, instead of being stored; with D = rowsum(dO * O):

    dV_j += P^T dO_i,   dP = dO_i V_j^T,   dS = P * (dP - D_i),
    dQ_i += s dS K_j (accumulated in HBM),   dK_j += s dS^T Q_i.

HBM traffic is exactly :func:`~minitorch.kernels.io_model.flash_forward_traffic` and
:func:`~minitorch.kernels.io_model.flash_backward_traffic`; extra memory is O(tiles).

Lab: 08_fused_kernels_flash_attention
Paper: Dao, Fu, Ermon, Rudra & Ré 2022, FlashAttention (Algorithms 1, 2 and 4); Dao 2023,
FlashAttention-2 (loop order, logsumexp only).
"""

from __future__ import annotations

import numpy as np

from minitorch.kernels.attention import causal_mask
from minitorch.kernels.io_model import HBM, kv_blocks, q_blocks

__all__ = ["flash_attention", "flash_attention_backward", "flash_attention_forward"]


def _scores(q: np.ndarray, k: np.ndarray, i0: int, j0: int, scale: float, causal: bool):
    """The scaled scores of one tile pair, masked when causal: (rows of q, rows of k)."""
    s = scale * (q @ k.T)
    if causal:
        rows, cols = np.arange(i0, i0 + len(q)), np.arange(j0, j0 + len(k))
        s = np.where(causal_mask(rows, cols), -np.inf, s)
    return s


def flash_attention_forward(
    hbm: HBM, block_q: int, block_kv: int, causal: bool = False, scale: float | None = None
) -> None:
    """Read Q, K, V (n, d) from ``hbm``; write O (n, d) and the row logsumexp L (n,)."""
    n, d = hbm.shape("Q")
    scale = 1.0 / np.sqrt(d) if scale is None else scale
    for i0, i1 in q_blocks(n, block_q):
        q = hbm.load("Q", slice(i0, i1))  # (bq, d), stays in SRAM
        m, l = np.full(i1 - i0, -np.inf), np.zeros(i1 - i0)
        acc = np.zeros((i1 - i0, d))
        for j0, j1 in kv_blocks(n, block_kv, i1, causal):
            k, v = hbm.load("K", slice(j0, j1)), hbm.load("V", slice(j0, j1))
            s = _scores(q, k, i0, j0, scale, causal)  # (bq, bk)
            m_new = np.maximum(m, s.max(axis=1))
            p = np.exp(s - m_new[:, None])
            alpha = np.exp(m - m_new)  # rescales what was summed against the old maximum
            l = alpha * l + p.sum(axis=1)
            acc = alpha[:, None] * acc + p @ v
            m = m_new
        hbm.store("O", acc / l[:, None], slice(i0, i1))
        hbm.store("L", m + np.log(l), slice(i0, i1))


def flash_attention_backward(
    hbm: HBM, block_q: int, block_kv: int, causal: bool = False, scale: float | None = None
) -> None:
    """From Q, K, V, O, dO, L in ``hbm``, write dQ, dK, dV (dQ starts at zero) and D."""
    n, d = hbm.shape("Q")
    scale = 1.0 / np.sqrt(d) if scale is None else scale
    for i0, i1 in q_blocks(n, block_q):  # D = rowsum(dO * O), one pass, (n,)
        rows = slice(i0, i1)
        hbm.store("D", (hbm.load("dO", rows) * hbm.load("O", rows)).sum(axis=1), rows)
    for j0, j1 in kv_blocks(n, block_kv):
        k, v = hbm.load("K", slice(j0, j1)), hbm.load("V", slice(j0, j1))
        dk, dv = np.zeros_like(k), np.zeros_like(v)
        for i0, i1 in q_blocks(n, block_q):
            if causal and i1 <= j0:  # the whole query block is before this key block
                continue
            rows = slice(i0, i1)
            q, do = hbm.load("Q", rows), hbm.load("dO", rows)
            lse, dd = hbm.load("L", rows), hbm.load("D", rows)
            p = np.exp(_scores(q, k, i0, j0, scale, causal) - lse[:, None])  # recomputed
            dv += p.T @ do
            ds = p * (do @ v.T - dd[:, None])
            hbm.store("dQ", hbm.load("dQ", rows) + scale * (ds @ k), rows)
            dk += scale * (ds.T @ q)
        hbm.store("dK", dk, slice(j0, j1))
        hbm.store("dV", dv, slice(j0, j1))


def flash_attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    causal: bool = False,
    block_q: int = 64,
    block_kv: int = 64,
    scale: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Arrays in, (O, L) out: FlashAttention forward through a fresh :class:`HBM`."""
    n, d = q.shape
    hbm = HBM({"Q": q, "K": k, "V": v, "O": np.zeros((n, d)), "L": np.zeros(n)})
    flash_attention_forward(hbm, block_q, block_kv, causal, scale)
    return hbm.array("O"), hbm.array("L")
