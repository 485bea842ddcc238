"""Context parallelism: attention over a sequence split across ranks, two ways.

Rank r holds rows ``r n_b .. (r + 1) n_b - 1`` of Q, K and V (``n_b = n / p``, every shape
``(..., n_b, d)``; leading axes are heads). Two ways to attend over the whole sequence:

**Ring attention** (Liu et al. 2023). Q stays put; the K/V blocks travel around the ring
``r -> r + 1``. At step t rank r holds the block of rank ``(r - t) mod p`` and folds it into
its running result with the online softmax (Milakov & Gimelshein 2018), keeping per query
row the running max ``m``, the running sum ``l`` and the unnormalized output ``acc``::

    m' = max(m, rowmax(S_t))        S_t = Q K_t^T / sqrt(d)  (masked: -inf)
    acc' = acc e^(m - m') + e^(S_t - m') V_t        l' = l e^(m - m') + rowsum(e^(S_t - m'))

and returns ``acc / l``. Dropping the factor ``e^(m - m')`` (adding partial softmaxes taken
against different maxima) is wrong. Each rank sends ``(p - 1)`` K/V blocks, only to its ring
neighbour, and never holds more than one foreign block. With ``causal=True`` a block from a
later rank is fully masked and skipped (it is still passed on).

**DeepSpeed-Ulysses** (Jacobs et al. 2023). An all-to-all turns sequence sharding into head
sharding (every rank gets the whole sequence for ``h / p`` heads), attention runs locally,
and a second all-to-all turns it back. Each all-to-all sends ``(p - 1) / p`` of the local
tensor: ``4 (p - 1) / p`` of one of Q, K, V, O per rank in all.

Lab: 26_context_expert_parallel_planner
Paper: Liu, Zaharia, Abbeel, "Ring Attention with Blockwise Transformers for Near-Infinite
    Context" (2023); Jacobs et al., "DeepSpeed Ulysses: System Optimizations for Enabling
    Training of Extreme Long Sequence Transformer Models" (2023)
"""

from __future__ import annotations

import numpy as np

from minitorch.comm.collectives import all_to_all
from minitorch.comm.protocol import Communicator

__all__ = [
    "attention",
    "merge_block",
    "ring_attention",
    "ring_bytes",
    "ulysses_attention",
    "ulysses_bytes",
]


def attention(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool = False, q0: int = 0, k0: int = 0
) -> np.ndarray:
    """softmax(Q K^T / sqrt(d)) V; rows of Q start at position q0, rows of K at k0."""
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (..., nq, nk)
    if causal:
        qi = q0 + np.arange(q.shape[-2])[:, None]
        kj = k0 + np.arange(k.shape[-2])[None, :]
        s = np.where(kj <= qi, s, -np.inf)
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return (e / e.sum(axis=-1, keepdims=True)) @ v  # type: ignore[no-any-return]


def merge_block(
    state: tuple[np.ndarray, np.ndarray, np.ndarray], scores: np.ndarray, v: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fold one block of scores (..., nq, nk) and values into (acc, m, l), rescaling the old."""
    acc, m, l = state
    m_new = np.maximum(m, scores.max(axis=-1))  # (..., nq)
    safe = np.where(np.isfinite(m_new), m_new, 0.0)  # a row with nothing seen yet
    alpha = np.exp(m - safe)  # e^(m - m'): 0 when m = -inf
    p = np.exp(scores - safe[..., None])
    return acc * alpha[..., None] + p @ v, m_new, l * alpha + p.sum(axis=-1)


def ring_attention(
    comm: Communicator, q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool = False
) -> np.ndarray:
    """This rank's rows of attention over the whole sequence; K/V blocks go round the ring."""
    p, r = comm.world_size, comm.rank
    nb, d = q.shape[-2], q.shape[-1]
    state = (
        np.zeros((*q.shape[:-1], v.shape[-1]), dtype=np.result_type(q, v)),
        np.full(q.shape[:-1], -np.inf),
        np.zeros(q.shape[:-1]),
    )
    kv = np.stack([k, v])  # one message per step
    for t in range(p):
        src = (r - t) % p
        if t < p - 1:
            comm.send(kv, (r + 1) % p)  # buffered: pass the block on before using it
        if not (causal and src > r):  # a later rank's keys are all in the future
            s = q @ np.swapaxes(kv[0], -1, -2) / np.sqrt(d)
            if causal and src == r:
                s = np.where(np.tril(np.ones((nb, nb), bool)), s, -np.inf)
            state = merge_block(state, s, kv[1])
        if t < p - 1:
            kv = comm.recv((r - 1) % p)
    acc, _, l = state
    return acc / l[..., None]  # type: ignore[no-any-return]


def ring_bytes(block_nbytes: int, p: int) -> int:
    """Bytes one rank sends in ring attention: (p - 1) K blocks and (p - 1) V blocks."""
    return 2 * (p - 1) * block_nbytes


def _seq_to_heads(comm: Communicator, x: np.ndarray) -> np.ndarray:
    """(h, n_b, d) sequence shard -> (h / p, n, d) head shard (all-to-all)."""
    parts = all_to_all(comm, np.split(x, comm.world_size, axis=-3))
    return np.concatenate(parts, axis=-2)


def _heads_to_seq(comm: Communicator, x: np.ndarray) -> np.ndarray:
    """(h / p, n, d) head shard -> (h, n_b, d) sequence shard (all-to-all)."""
    parts = all_to_all(comm, np.split(x, comm.world_size, axis=-2))
    return np.concatenate(parts, axis=-3)


def ulysses_attention(
    comm: Communicator, q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool = False
) -> np.ndarray:
    """Attention with sequence-sharded (h, n_b, d) inputs via two all-to-alls (heads % p == 0)."""
    if q.shape[-3] % comm.world_size:
        raise ValueError(f"{q.shape[-3]} heads do not split over {comm.world_size} ranks")
    qh, kh, vh = (_seq_to_heads(comm, t) for t in (q, k, v))
    return _heads_to_seq(comm, attention(qh, kh, vh, causal))


def ulysses_bytes(local_nbytes: int, p: int) -> int:
    """Bytes one rank sends in Ulysses: (p - 1) / p of Q, K, V and the output."""
    return 4 * (p - 1) * local_nbytes // p
