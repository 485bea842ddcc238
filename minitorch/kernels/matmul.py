"""Matmul versions side by side: loop orders, blocked loops, blocked with numpy micro-kernels.

All compute ``C = A @ B`` for ``A: (n, k)`` and ``B: (k, m)``; they differ only in the order
they touch memory. ``matmul_loops`` is the textbook triple loop in any of the six orders
(pure Python, for small matrices: ikj walks B and C along rows, ijk walks B down a column).
``matmul_blocked`` runs the same loops tile by tile, so each tile of A, B and C is reused
while it is in cache. ``matmul_tiled`` replaces the three inner loops by one call of a
micro-kernel on ``T x T`` tiles (``np.matmul`` by default), accumulating into C: with
``ceil(n/T) ceil(k/T) ceil(m/T)`` kernel calls, the per-call cost (a few microseconds of
Python and dispatch) is paid that many times, which is why small tiles are slow in numpy
while in C (BLAS) the same blocking is the fast path.

Lab: 06_matmul_tiling
Paper: Goto & van de Geijn 2008, *Anatomy of High-Performance Matrix Multiplication*;
Lam, Rothberg & Wolf 1991, *The Cache Performance and Optimizations of Blocked Algorithms*.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["kernel_calls", "matmul_blocked", "matmul_loops", "matmul_tiled", "tile_bytes"]

Kernel = Callable[[np.ndarray, np.ndarray], np.ndarray]


def matmul_loops(a: np.ndarray, b: np.ndarray, order: str = "ikj") -> np.ndarray:
    """Triple loop in ``order`` (outermost first), on plain Python floats."""
    if sorted(order) != ["i", "j", "k"]:
        raise ValueError(f"order must be a permutation of 'ijk', got {order!r}")
    (n, kk), m = a.shape, b.shape[1]
    av, bv = a.tolist(), b.tolist()
    c = [[0.0] * m for _ in range(n)]
    extent = {"i": n, "j": m, "k": kk}
    idx = {"i": 0, "j": 0, "k": 0}
    for x in range(extent[order[0]]):
        idx[order[0]] = x
        for y in range(extent[order[1]]):
            idx[order[1]] = y
            for z in range(extent[order[2]]):
                idx[order[2]] = z
                i, j, k = idx["i"], idx["j"], idx["k"]
                c[i][j] += av[i][k] * bv[k][j]
    return np.array(c, dtype=np.float64).reshape(n, m)


def matmul_blocked(a: np.ndarray, b: np.ndarray, tile: int) -> np.ndarray:
    """Tiles (ii, kk, jj) outside, the ikj loop on Python floats inside each tile."""
    (n, kk), m = a.shape, b.shape[1]
    av, bv = a.tolist(), b.tolist()
    c = [[0.0] * m for _ in range(n)]
    for i0 in range(0, n, tile):
        for k0 in range(0, kk, tile):
            for j0 in range(0, m, tile):
                for i in range(i0, min(i0 + tile, n)):
                    ci, ai = c[i], av[i]
                    for k in range(k0, min(k0 + tile, kk)):
                        aik, bk = ai[k], bv[k]
                        for j in range(j0, min(j0 + tile, m)):
                            ci[j] += aik * bk[j]
    return np.array(c, dtype=np.float64).reshape(n, m)


def matmul_tiled(a: np.ndarray, b: np.ndarray, tile: int, kernel: Kernel = np.matmul) -> np.ndarray:
    """C = A @ B by ``kernel`` calls on tiles of at most ``tile x tile``, accumulated in C."""
    (n, kk), m = a.shape, b.shape[1]
    c = np.zeros((n, m), dtype=np.result_type(a, b))
    for i in range(0, n, tile):
        for k in range(0, kk, tile):
            a_t = a[i : i + tile, k : k + tile]
            for j in range(0, m, tile):
                c[i : i + tile, j : j + tile] += kernel(a_t, b[k : k + tile, j : j + tile])
    return c


def kernel_calls(n: int, k: int, m: int, tile: int) -> int:
    """Number of micro-kernel calls of :func:`matmul_tiled`."""
    return (-(-n // tile)) * (-(-k // tile)) * (-(-m // tile))


def tile_bytes(n: int, k: int, m: int, tile: int, itemsize: int = 8) -> int:
    """Bytes of A and B tiles handed to the micro-kernel: A read ceil(m/T) times, B ceil(n/T)."""
    return itemsize * (n * k * -(-m // tile) + k * m * -(-n // tile))
