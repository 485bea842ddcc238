"""Summing n float32 numbers three ways, and the error bound each one guarantees.

With u = 2^-24 (float32 unit roundoff) and S = sum |x_i|, the computed sum s of the exact sum
sigma obeys (Higham 2002, ch. 4):

    naive     |s - sigma| <= gamma_(n-1) S,         gamma_k = k u / (1 - k u)   ~ (n-1) u S
    pairwise  |s - sigma| <= gamma_d S,             d = depth of the addition tree ~ log2 n
    Kahan     |s - sigma| <= (2u + O(n u^2)) S      independent of n to first order

Pairwise summation splits x into halves (left = the first n // 2 values), sums each half
recursively and adds the two; blocks of at most 8 values are summed naively (numpy's own
``np.add.reduce`` does the same with blocks of 128, unrolled 8 ways). Kahan summation carries
the rounding error of every addition in a compensation term and feeds it back next step.

Everything accumulates in float32 (np.float32 scalars): the point is float32's u, not
Python's float64.

Lab: 01_numerics
Paper: Higham 1993, "The accuracy of floating point summation"; Kahan 1965, "Further remarks
on reducing truncation errors"
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["U32", "gamma", "kahan_error_bound", "kahan_sum", "naive_error_bound", "naive_sum"]
__all__ += ["pairwise_depth", "pairwise_error_bound", "pairwise_sum"]

U32 = 2.0**-24  # unit roundoff of float32


def naive_sum(x: np.ndarray) -> np.float32:
    """Sum left to right in float32: s = (((x0 + x1) + x2) + ...). x: (n,) float32."""
    s = np.float32(0.0)
    for v in np.asarray(x, dtype=np.float32):
        s = s + v
    return s


def pairwise_sum(x: np.ndarray, block: int = 8) -> np.float32:
    """Sum by recursive halving in float32; blocks of at most ``block`` values summed naively.

    sum(x) = sum(x[: n // 2]) + sum(x[n // 2 :]). x: (n,) float32.
    """
    x = np.asarray(x, dtype=np.float32)
    if len(x) <= block:
        return naive_sum(x)
    half = len(x) // 2
    return pairwise_sum(x[:half], block) + pairwise_sum(x[half:], block)


def kahan_sum(x: np.ndarray) -> np.float32:
    """Compensated (Kahan) summation in float32. x: (n,) float32.

    c holds the low-order part lost by the last addition: t = s + y loses (t - s) - y exactly
    (when |s| >= |y|), and that is subtracted from the next term.
    """
    s = np.float32(0.0)
    c = np.float32(0.0)
    for v in np.asarray(x, dtype=np.float32):
        y = v - c
        t = s + y
        c = (t - s) - y  # what was rounded away from y, with the sign flipped
        s = t
    return s


def gamma(k: int, u: float = U32) -> float:
    """Higham's gamma_k = k u / (1 - k u): the bound on the product of k rounding errors."""
    if k * u >= 1.0:
        return math.inf
    return k * u / (1.0 - k * u)


def _abs_sum(x: np.ndarray) -> float:
    return math.fsum(np.abs(np.asarray(x, dtype=np.float64)).tolist())


def naive_error_bound(x: np.ndarray, u: float = U32) -> float:
    """gamma_(n-1) sum |x_i|: the worst error of left-to-right summation."""
    return gamma(max(len(x) - 1, 0), u) * _abs_sum(x)


def pairwise_depth(n: int, block: int = 8) -> int:
    """Largest number of additions any value goes through in ``pairwise_sum`` of n values.

    Each halving level adds one; a final naive block of m values adds m - 1. Not monotone in
    n (a block of 8 is deeper than two halves of 4 and 5). For block 1 or 2: ceil(log2 n).
    """
    best, level, sizes = 0, 0, {n}
    while sizes:  # the sizes at one level of the tree: at most two distinct values
        best = max([best] + [level + m - 1 for m in sizes if 0 < m <= block])
        sizes = {h for m in sizes if m > block for h in (m // 2, m - m // 2)}
        level += 1
    return best


def pairwise_error_bound(x: np.ndarray, block: int = 8, u: float = U32) -> float:
    """gamma_d sum |x_i| with d = pairwise_depth(n, block) (~ ceil(log2 n) u sum |x_i|)."""
    return gamma(pairwise_depth(len(x), block), u) * _abs_sum(x)


def kahan_error_bound(x: np.ndarray, u: float = U32) -> float:
    """(2u + 4 n u^2) sum |x_i|: Kahan's first-order 2u, with a safe constant on O(n u^2)."""
    return (2.0 * u + 4.0 * len(x) * u * u) * _abs_sum(x)
