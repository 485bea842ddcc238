"""Tile-size search: time the tiled matmul per tile size, keep the median, pick the best.

A search measures each candidate ``repeats + warmup`` times, drops the warm-up calls (first
touch of the buffers, caches and allocator still cold), and ranks candidates by the median,
which one preempted run on a shared machine does not move (a mean does; a minimum rewards a
lucky run). This is the loop every autotuner runs (ATLAS, Triton's ``autotune``, TVM), with a
cost model or a measurement; here the measurement is the wall clock of
:func:`minitorch.kernels.matmul.matmul_tiled` against one ``np.matmul`` call.

Lab: 06_matmul_tiling
Paper: Whaley & Dongarra 1998, *Automatically Tuned Linear Algebra Software* (ATLAS);
Goto & van de Geijn 2008, *Anatomy of High-Performance Matrix Multiplication*.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence

import numpy as np

from minitorch.kernels.matmul import matmul_tiled

__all__ = ["gflops", "measure_tiled", "tile_search"]


def tile_search(
    measure: Callable[[int], float], tiles: Sequence[int], repeats: int = 3, warmup: int = 1
) -> tuple[int, dict[int, float]]:
    """Return the tile with the lowest median time and the median of each tile.

    ``measure(tile)`` returns seconds; it is called ``warmup + repeats`` times per tile and the
    first ``warmup`` results are dropped. Ties go to the smaller tile.
    """
    medians: dict[int, float] = {}
    for tile in tiles:
        runs = [float(measure(tile)) for _ in range(warmup + repeats)][warmup:]
        medians[tile] = statistics.median(runs)
    best = min(medians, key=lambda t: (medians[t], t))
    return best, medians


def measure_tiled(a: np.ndarray, b: np.ndarray) -> Callable[[int], float]:
    """A ``measure(tile)`` that times one ``matmul_tiled(a, b, tile)`` (tile 0: np.matmul)."""
    c = np.empty((a.shape[0], b.shape[1]))

    def measure(tile: int) -> float:
        t0 = time.perf_counter()
        if tile == 0:
            np.matmul(a, b, out=c)
        else:
            matmul_tiled(a, b, tile)
        return time.perf_counter() - t0

    return measure


def gflops(n: int, k: int, m: int, seconds: float) -> float:
    """GFLOP/s of an (n, k) @ (k, m) matmul: 2 n k m FLOPs."""
    return 2.0 * n * k * m / seconds / 1e9
