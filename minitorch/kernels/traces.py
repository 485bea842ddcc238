"""Address traces of matmul loop nests, and the traffic a cache model predicts for them.

``C += A @ B`` on ``n x n`` row-major float64 matrices laid out one after the other (A at
byte 0, B at ``8 n^2``, C at ``16 n^2``). Every iteration ``(i, j, k)`` of the loop nest reads
``A[i, k]``, then ``B[k, j]``, then reads and writes ``C[i, j]``: three addresses per
iteration, ``3 n^3`` in all. The trace of a loop order (``"ijk"``: i outermost, k innermost)
and of the blocked nest (tiles ``ii, kk, jj`` outside, ``i, k, j`` inside a tile) are built with
``np.indices``, no Python loop over iterations, and fed to :mod:`minitorch.hardware.cache`.

Two cost models:

* ``predicted_misses``: a cache too small to keep anything across one run of the inner loop.
  Per inner-loop run an array walked with stride 1 misses once per line (``n / L`` times),
  one walked with stride ``n`` misses on every access (``n``), one the inner loop does not
  move through stays put (about 0). Times ``n^2`` runs: ``n^3 (1/L + 1)`` for ijk,
  ``n^3 (2/L)`` for ikj, ``2 n^3`` for jki (``L`` elements per line).
* ``tiled_misses``: tiles of ``T x T`` that all fit: each of the ``(n/T)^3`` tile steps loads
  a tile of A and of B (``2 T^2 / L`` lines) and C is loaded once per ``(ii, jj)``:
  ``2 n^3 / (T L) + n^2 / L``. With ``3 T^2`` elements filling a cache of ``M`` elements,
  ``T = sqrt(M / 3)`` and the traffic is ``~ n^3 / (L sqrt(M))`` instead of ``~ n^3 / L``.

Lab: 06_matmul_tiling
Paper: Hong & Kung 1981, *I/O complexity: The red-blue pebble game* (the n^3 / sqrt(M)
bound); Lam, Rothberg & Wolf 1991, *The Cache Performance and Optimizations of Blocked
Algorithms*.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "ELEM",
    "ORDERS",
    "bases",
    "blocked_trace",
    "loop_trace",
    "predicted_misses",
    "tiled_misses",
]

ELEM = 8  # bytes of a float64
ORDERS = ("ijk", "ikj", "jik", "jki", "kij", "kji")


def bases(n: int, elem: int = ELEM) -> tuple[int, int, int]:
    """Byte addresses of A[0, 0], B[0, 0] and C[0, 0]."""
    return 0, n * n * elem, 2 * n * n * elem


def _interleave(n: int, i: np.ndarray, j: np.ndarray, k: np.ndarray, elem: int) -> np.ndarray:
    a0, b0, c0 = bases(n, elem)
    out = np.empty((i.size, 3), dtype=np.int64)
    out[:, 0] = a0 + (i * n + k) * elem
    out[:, 1] = b0 + (k * n + j) * elem
    out[:, 2] = c0 + (i * n + j) * elem
    return out.ravel()


def loop_trace(n: int, order: str = "ijk", elem: int = ELEM) -> np.ndarray:
    """Byte addresses (3 n^3,) of the loop nest ``order`` (outermost loop first)."""
    if sorted(order) != ["i", "j", "k"]:
        raise ValueError(f"order must be a permutation of 'ijk', got {order!r}")
    grids = np.indices((n, n, n), dtype=np.int64).reshape(3, -1)
    var = dict(zip(order, grids, strict=True))
    return _interleave(n, var["i"], var["j"], var["k"], elem)


def blocked_trace(n: int, tile: int, elem: int = ELEM) -> np.ndarray:
    """Byte addresses of the blocked nest: tiles (ii, kk, jj), inside them i, k, j."""
    nb = -(-n // tile)
    ii, kk, jj, di, dk, dj = np.indices((nb, nb, nb, tile, tile, tile), dtype=np.int64)
    i, k, j = ii * tile + di, kk * tile + dk, jj * tile + dj
    keep = ((i < n) & (j < n) & (k < n)).ravel()
    return _interleave(n, i.ravel()[keep], j.ravel()[keep], k.ravel()[keep], elem)


def predicted_misses(n: int, order: str, line_elems: int) -> float:
    """Misses of ``order`` in a cache that keeps nothing across one run of the inner loop."""
    inner = order[-1]
    per_run = 0.0
    for index in ("ik", "kj", "ij"):  # A[i, k], B[k, j], C[i, j]
        if inner == index[1]:
            per_run += n / line_elems  # stride 1: one miss per line
        elif inner == index[0]:
            per_run += n  # stride n: every access a new line
    return float(n * n * per_run)


def tiled_misses(n: int, tile: int, line_elems: int) -> float:
    """Misses of the blocked nest when three T x T tiles fit in the cache."""
    return 2 * n**3 / (tile * line_elems) + n * n / line_elems
