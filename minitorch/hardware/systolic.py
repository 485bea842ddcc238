"""A cycle-level R x C systolic array: weight- and output-stationary dataflows, tiled GEMMs.

**Weight-stationary (WS)**, as in the TPU's matrix unit: PE ``(k, n)`` holds ``B[k, n]``. The
weights shift in from the top, one row per cycle (``R`` cycles). Then row ``m`` of ``A`` enters
from the left, **skewed**: ``A[m, k]`` enters array row ``k`` at cycle ``m + k``, moves one PE to
the right per cycle, and meets at PE ``(k, n)`` the partial sum of ``C[m, n]`` that moves one PE
down per cycle. ``C[m, n]`` leaves the bottom of the array ``R - 1 + n`` cycles after row ``m``
entered. One fold (``K <= R``, ``N <= C``; unused PEs hold zeros) therefore takes

$$T_{WS} = \\underbrace{R}_{\\text{load}} + \\underbrace{M}_{\\text{stream}} +
\\underbrace{R + C - 2}_{\\text{fill and drain}} = 2R + C + M - 2.$$

**Output-stationary (OS)**: PE ``(m, n)`` accumulates ``C[m, n]``; ``A[m, k]`` enters row ``m``
at cycle ``m + k`` from the left, ``B[k, n]`` enters column ``n`` at cycle ``k + n`` from the top;
they meet at PE ``(m, n)`` at cycle ``m + n + k``. After ``K + R + C - 2`` cycles the results
shift out, one row per cycle (``R``): ``T_OS = 2R + C + K - 2`` for ``M <= R``, ``N <= C``.

Both simulators keep each PE's registers as ``(R, C)`` arrays and advance all PEs in one
numpy step per cycle; ``busy[t]`` counts the PEs doing a useful MAC at cycle ``t``.
A large GEMM is cut into folds; with **double-buffered** weight registers (TPU v1 keeps a
second tile of weights) fold ``i + 1`` loads while fold ``i`` streams, and the streams run back
to back, so ``T = R + (F - 1) max(M, R) + M + R + C - 2`` for ``F`` folds.

Lab: 27_accelerator_architecture
Paper: Kung 1982, "Why systolic architectures?", IEEE Computer; Jouppi et al. 2017, "In-datacenter
performance analysis of a tensor processing unit", ISCA; Chen et al. 2016, "Eyeriss", ISCA
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Mac",
    "SystolicRun",
    "cube_cycles",
    "gemm_cycles",
    "os_cycles",
    "simulate_os",
    "simulate_ws",
    "tiled_gemm",
    "utilisation",
    "ws_cycles",
]


@dataclass(frozen=True, slots=True)
class SystolicRun:
    """One fold's result ``c``, its cycle count, and the busy PEs per cycle (sum: ``MKN``)."""

    c: np.ndarray
    cycles: int
    busy: np.ndarray
    frames: np.ndarray | None = None  # (cycles, R, C) bool: which PEs did a MAC, if asked


def ws_cycles(m: int, rows: int, cols: int) -> int:
    """Closed form of one weight-stationary fold: load ``R``, stream ``M``, fill/drain ``R+C-2``."""
    return 2 * rows + cols + m - 2


def os_cycles(k: int, rows: int, cols: int) -> int:
    """Closed form of one output-stationary fold: ``K + R + C - 2`` compute, ``R`` to drain."""
    return 2 * rows + cols + k - 2


def _check_fold(a: np.ndarray, b: np.ndarray, fits: bool, what: str) -> None:
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"need A (M, K) and B (K, N), got {a.shape} and {b.shape}")
    if not fits:
        raise ValueError(f"one fold needs {what}: tile the GEMM (tiled_gemm)")


Mac = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def _fma(x: np.ndarray, y: np.ndarray, acc: np.ndarray) -> np.ndarray:
    return acc + x * y


def simulate_ws(
    a: np.ndarray, b: np.ndarray, rows: int, cols: int, mac: Mac = _fma, frames: bool = False
) -> SystolicRun:
    """Weight-stationary fold ``A (M, K) @ B (K, N)`` on an ``R x C`` array, cycle by cycle.

    ``mac(act, weight, psum_from_above)`` is every PE's arithmetic for one cycle, on ``(R, C)``
    arrays; ``frames`` also records which PEs did a useful MAC at each cycle."""
    (m, k), n = a.shape, b.shape[1]
    _check_fold(a, b, k <= rows and n <= cols, "K <= R and N <= C")
    w = np.zeros((rows, cols))
    w[:k, :n] = b
    load = rows  # weights shift in from the top, one array row per cycle
    total = ws_cycles(m, rows, cols)
    act = np.zeros((rows, cols))  # activation register of each PE (moves right)
    psum = np.zeros((rows, cols))  # partial-sum register of each PE (moves down)
    valid = np.zeros((rows, cols), bool)  # does the activation register hold a real A[m, k]
    out = np.zeros((m, n))
    busy = np.zeros(total, np.int64)
    film = np.zeros((total, rows, cols), bool) if frames else None
    r_idx = np.arange(rows)
    for t in range(load, total):
        s = t - load  # cycle of the streaming phase
        row_m = s - r_idx  # skew: array row r gets A[s - r, r]
        enter = (row_m >= 0) & (row_m < m) & (r_idx < k)
        act[:, 1:], valid[:, 1:] = act[:, :-1].copy(), valid[:, :-1].copy()
        act[:, 0] = np.where(enter, a[np.clip(row_m, 0, m - 1), np.clip(r_idx, 0, k - 1)], 0.0)
        valid[:, 0] = enter
        above = np.zeros((rows, cols))
        above[1:] = psum[:-1]
        psum = np.asarray(mac(act, w, above), dtype=np.float64)
        useful = valid[:k, :n]
        busy[t] = int(useful.sum())
        if film is not None:
            film[t, :k, :n] = useful
        col_m = s - (rows - 1) - np.arange(n)  # which row of C leaves each column's bottom
        done = (col_m >= 0) & (col_m < m)
        out[col_m[done], np.nonzero(done)[0]] = psum[rows - 1, :n][done]
    return SystolicRun(out, total, busy, film)


def simulate_os(
    a: np.ndarray, b: np.ndarray, rows: int, cols: int, mac: Mac = _fma, frames: bool = False
) -> SystolicRun:
    """Output-stationary fold ``A (M, K) @ B (K, N)`` on an ``R x C`` array, cycle by cycle.

    ``mac(from_left, from_top, accumulator)`` is every PE's arithmetic for one cycle."""
    (m, k), n = a.shape, b.shape[1]
    _check_fold(a, b, m <= rows and n <= cols, "M <= R and N <= C")
    compute, total = k + rows + cols - 2, os_cycles(k, rows, cols)
    left = np.zeros((rows, cols))  # A values moving right
    top = np.zeros((rows, cols))  # B values moving down
    lv, tv = np.zeros((rows, cols), bool), np.zeros((rows, cols), bool)
    acc = np.zeros((rows, cols))
    busy = np.zeros(total, np.int64)
    film = np.zeros((total, rows, cols), bool) if frames else None
    r_idx, c_idx = np.arange(rows), np.arange(cols)
    for t in range(compute):
        ka, kb = t - r_idx, t - c_idx  # skew on both edges
        ea, eb = (ka >= 0) & (ka < k) & (r_idx < m), (kb >= 0) & (kb < k) & (c_idx < n)
        left[:, 1:], lv[:, 1:] = left[:, :-1].copy(), lv[:, :-1].copy()
        top[1:], tv[1:] = top[:-1].copy(), tv[:-1].copy()
        left[:, 0] = np.where(ea, a[np.clip(r_idx, 0, m - 1), np.clip(ka, 0, k - 1)], 0.0)
        top[0] = np.where(eb, b[np.clip(kb, 0, k - 1), np.clip(c_idx, 0, n - 1)], 0.0)
        lv[:, 0], tv[0] = ea, eb
        acc = np.asarray(mac(left, top, acc), dtype=np.float64)
        useful = lv & tv
        busy[t] = int(useful.sum())
        if film is not None:
            film[t] = useful
    # drain: the accumulators shift out of the array, one row per cycle (busy stays 0)
    return SystolicRun(acc[:m, :n].copy(), total, busy, film)


def _ceil(x: int, y: int) -> int:
    return -(-x // y)


def gemm_cycles(
    m: int, k: int, n: int, rows: int, cols: int, dataflow: str = "ws", double_buffered: bool = True
) -> int:
    """Cycles of ``(M, K) @ (K, N)`` cut into folds of the array (closed form).

    WS folds are ``(K/R) (N/C)`` weight tiles, each streaming all ``M`` rows; OS folds are
    ``(M/R) (N/C)`` output tiles, each streaming all of ``K``. With double buffering the next
    fold's load (or the last fold's drain, OS) hides behind the current stream.
    """
    if dataflow == "ws":
        folds, stream = _ceil(k, rows) * _ceil(n, cols), m
    elif dataflow == "os":
        folds, stream = _ceil(m, rows) * _ceil(n, cols), k
    else:
        raise ValueError(f"dataflow is 'ws' or 'os', not {dataflow!r}")
    one = 2 * rows + cols + stream - 2
    if not double_buffered:
        return folds * one
    return one + (folds - 1) * max(stream, rows)


def utilisation(
    m: int, k: int, n: int, rows: int, cols: int, dataflow: str = "ws", double_buffered: bool = True
) -> float:
    """Useful MACs over PE-cycles: ``M K N / (R C T)``."""
    return m * k * n / (rows * cols * gemm_cycles(m, k, n, rows, cols, dataflow, double_buffered))


def cube_cycles(m: int, k: int, n: int, cube: int = 16) -> int:
    """Cycles of a DaVinci-style cube that does one ``cube^3`` block of MACs per cycle."""
    return _ceil(m, cube) * _ceil(k, cube) * _ceil(n, cube)


def tiled_gemm(a: np.ndarray, b: np.ndarray, rows: int, cols: int) -> tuple[np.ndarray, int]:
    """``A @ B`` run fold by fold on the WS simulator; cycles as :func:`gemm_cycles` (double
    buffered): the stream of every fold but the last costs ``max(M, R)``."""
    (m, k), n = a.shape, b.shape[1]
    out = np.zeros((m, n))
    folds = 0
    for k0 in range(0, k, rows):
        for n0 in range(0, n, cols):
            run = simulate_ws(a[:, k0 : k0 + rows], b[k0 : k0 + rows, n0 : n0 + cols], rows, cols)
            out[:, n0 : n0 + cols] += run.c
            folds += 1
    return out, ws_cycles(m, rows, cols) + (folds - 1) * max(m, rows)
