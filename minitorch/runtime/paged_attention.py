"""Paged attention: K/V stored in fixed-size blocks, gathered through a block table.

The cache of one layer is two arrays ``(num_blocks, block_size, n_kv_head, head_dim)``. A
sequence's token ``p`` is in block ``table[p // block_size]`` at offset ``p % block_size``;
flattening the first two axes, that is slot ``table[p // bs] * bs + p % bs``. Attention for
the sequence's newest ``n_q`` queries (positions ``L - n_q .. L - 1``, ``L`` = context
length) gathers its ``L`` keys and values through the table and is then ordinary causal
attention, so paged attention equals contiguous attention exactly: only *where* K/V live
changes. Slots past ``L`` in the last block hold stale data and must not be read.

    cache = PagedKVCache(n_layer=2, num_blocks=16, block_size=4, n_kv_head=2, head_dim=16)
    cache.write(layer, slots, k, v)                           # k, v: (n, n_kv_head, head_dim)
    out = paged_attention(q, cache.k[layer], cache.v[layer], table, L)   # q: (n_q, H, d)

Lab: 18_paged_kv_cache
Paper: Kwon et al., "Efficient Memory Management for Large Language Model Serving with
PagedAttention", SOSP 2023
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["PagedKVCache", "gather_kv", "paged_attention", "slot_mapping"]


def slot_mapping(
    block_table: Sequence[int], positions: Sequence[int], block_size: int
) -> np.ndarray:
    """Flat cache slot of each token position: table[p // bs] * bs + p % bs (int64)."""
    table = np.asarray(block_table, dtype=np.int64)
    pos = np.asarray(positions, dtype=np.int64)
    return table[pos // block_size] * block_size + pos % block_size


def gather_kv(cache: np.ndarray, block_table: Sequence[int], context_len: int) -> np.ndarray:
    """The first context_len tokens of a sequence, (L, ...), from a (blocks, bs, ...) cache."""
    bs = cache.shape[1]
    slots = slot_mapping(block_table, range(context_len), bs)
    return cache.reshape(-1, *cache.shape[2:])[slots]


def paged_attention(
    q: np.ndarray,
    k_cache: np.ndarray,
    v_cache: np.ndarray,
    block_table: Sequence[int],
    context_len: int,
    alibi_slopes: np.ndarray | None = None,
) -> np.ndarray:
    """Causal attention of the last n_q positions over a paged cache.

    q: (n_q, H, d); k_cache, v_cache: (num_blocks, block_size, H_kv, d) with H_kv dividing H
    (query head h reads K/V head h // (H / H_kv)); returns (n_q, H, d) in q's dtype.
    ``alibi_slopes`` (H,) adds -slope * (i - j) to the score of query i, key j.
    """
    n_q, n_head, d = q.shape
    k: np.ndarray = gather_kv(k_cache, block_table, context_len)  # (L, H_kv, d)
    v: np.ndarray = gather_kv(v_cache, block_table, context_len)
    rep = n_head // k.shape[1]
    k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)  # (L, H, d)
    scores = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(d)  # (H, n_q, L)
    qpos = np.arange(context_len - n_q, context_len)[:, None]
    kpos = np.arange(context_len)[None, :]
    if alibi_slopes is not None:
        scores = scores - alibi_slopes[:, None, None] * (qpos - kpos)[None]
    scores = np.where(kpos <= qpos, scores, -np.inf)
    p = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("hqk,khd->qhd", p, v).astype(q.dtype)


class PagedKVCache:
    """K and V of every layer: arrays (n_layer, num_blocks, block_size, n_kv_head, head_dim)."""

    def __init__(
        self,
        n_layer: int,
        num_blocks: int,
        block_size: int,
        n_kv_head: int,
        head_dim: int,
        dtype: type = np.float32,
    ) -> None:
        shape = (n_layer, num_blocks, block_size, n_kv_head, head_dim)
        self.k: np.ndarray = np.zeros(shape, dtype)
        self.v: np.ndarray = np.zeros(shape, dtype)
        self.block_size = block_size

    def write(self, layer: int, slots: np.ndarray, k: np.ndarray, v: np.ndarray) -> None:
        """Store k, v (n, n_kv_head, head_dim) at flat slots (n,) of one layer."""
        for cache, x in ((self.k, k), (self.v, v)):
            flat = cache[layer].reshape(-1, *cache.shape[3:])  # a view: writes land in cache
            flat[np.asarray(slots, dtype=np.int64)] = x

    def copy_block(self, src: int, dst: int) -> None:
        """Copy-on-write: duplicate block src into dst in every layer."""
        self.k[:, dst] = self.k[:, src]
        self.v[:, dst] = self.v[:, src]

    def nbytes(self) -> int:
        return int(self.k.nbytes + self.v.nbytes)
