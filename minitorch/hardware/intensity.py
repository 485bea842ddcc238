"""FLOPs and bytes of the memory-hungry ops of a transformer: GEMV, softmax, layer norm, attention.

Each calculator returns an :class:`OpCost` (FLOPs, bytes) under one counting convention, the
one the lab's plain-loop counters use: every ``+ - * /``, comparison, ``exp`` and ``sqrt`` on
a float is one FLOP, and an ideal kernel moves each input from memory once and each output
to memory once (no cache misses, no spills). With ``s`` bytes per element:

* GEMV ``y = A x``, ``A: (m, n)``: ``2mn`` FLOPs; ``s(mn + n + m)`` bytes.
* row softmax of ``(r, c)``: per element a max, a subtract, an ``exp``, a sum and a divide:
  ``5rc`` FLOPs; read ``x``, write ``y``: ``2src`` bytes.
* layer norm of ``(r, c)`` with ``gamma, beta: (c,)``: per element one add for the mean, three
  for the variance (subtract, square, add), four to normalise (subtract, multiply by ``1/σ``,
  multiply by ``gamma``, add ``beta``); per row the mean's and the variance's divide and
  ``1/sqrt(var + eps)`` (add, sqrt, divide): ``8rc + 5r`` FLOPs; ``s(2rc + 2c)`` bytes.
* attention of one head, ``n`` queries and keys of width ``d``: ``S = QK^T`` (``2n^2 d``), a
  row softmax of ``S`` (``5n^2``), ``O = PV`` (``2n^2 d``). Fused (FlashAttention's ideal)
  it reads ``Q, K, V`` and writes ``O``: ``4nds`` bytes. Materialised, ``S`` and ``P`` also
  go to memory and back: ``4n^2 s`` bytes more.

GEMV, softmax and layer norm do O(1) FLOPs per byte whatever the size: memory-bound on every
machine of the last decade. Fused attention's intensity grows like ``n``; materialised, it is
capped near ``d/2`` FLOP/byte.

Lab: 05_roofline
Paper: Williams, Waterman, Patterson 2009, "Roofline: an insightful visual performance model";
Dao et al. 2022, "FlashAttention: fast and memory-efficient exact attention with IO-awareness"
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["OpCost", "attention_cost", "gemm_cost", "gemv_cost", "layernorm_cost", "softmax_cost"]


@dataclass(frozen=True, slots=True)
class OpCost:
    """An op's floating-point operations and the bytes an ideal kernel moves."""

    flops: int
    bytes: int

    @property
    def intensity(self) -> float:
        """FLOPs per byte: the op's x coordinate on a roofline."""
        return self.flops / self.bytes


def gemm_cost(m: int, n: int, k: int, bytes_per_element: int = 4) -> OpCost:
    """``(m, k) @ (k, n)``: ``2mnk`` FLOPs, read ``A`` and ``B``, write ``C``."""
    return OpCost(2 * m * n * k, bytes_per_element * (m * k + k * n + m * n))


def gemv_cost(m: int, n: int, bytes_per_element: int = 4) -> OpCost:
    """``y = A x`` with ``A: (m, n)``: ``2mn`` FLOPs, read ``A`` and ``x``, write ``y``."""
    return OpCost(2 * m * n, bytes_per_element * (m * n + n + m))


def softmax_cost(rows: int, cols: int, bytes_per_element: int = 4) -> OpCost:
    """Row softmax of ``(rows, cols)``: 5 FLOPs per element, read and write each element."""
    return OpCost(5 * rows * cols, 2 * bytes_per_element * rows * cols)


def layernorm_cost(rows: int, cols: int, bytes_per_element: int = 4) -> OpCost:
    """Layer norm over the last axis with ``gamma`` and ``beta``: ``8rc + 5r`` FLOPs."""
    flops = 8 * rows * cols + 5 * rows
    return OpCost(flops, bytes_per_element * (2 * rows * cols + 2 * cols))


def attention_cost(
    n: int, d: int, bytes_per_element: int = 4, *, materialized: bool = False
) -> OpCost:
    """One head of ``softmax(QK^T) V``; ``materialized`` writes and reads back ``S`` and ``P``."""
    flops = 4 * n * n * d + 5 * n * n
    moved = 4 * n * d + (4 * n * n if materialized else 0)
    return OpCost(flops, bytes_per_element * moved)
