"""Lab 06 experiments: the tiled numpy matmul against BLAS, and the cache simulator's speed.

1. Tiled matmul at n=1024 vs one ``np.matmul`` call, one thread, each tile size alternated
   with BLAS in one process: the ratio per tile, the best tile, and the fixed cost of one
   micro-kernel call (measured on 8x8 tiles, where the arithmetic is negligible).
2. Cache-simulator throughput (accesses per second) on the traces the lab simulates (ijk and
   blocked at n=64) and on a random trace (no run of same-line accesses to skip).

Lab: 06_matmul_tiling
"""

from __future__ import annotations

import time

import numpy as np

from a2s.bench import Figure, alternate, one_thread, register
from minitorch.hardware.cache import CacheConfig, simulate
from minitorch.kernels.matmul import kernel_calls, matmul_tiled
from minitorch.kernels.traces import blocked_trace, loop_trace

N = 1024
TILES = (64, 128, 256, 512)


@register
def tiled_vs_blas() -> list[Figure]:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((N, N)), rng.standard_normal((N, N))
    out = np.empty((N, N))
    ratios: dict[int, float] = {}
    with one_thread():
        for tile in TILES:

            def tiled(tile: int = tile) -> None:
                matmul_tiled(a, b, tile)

            t_tiled, t_blas = alternate(tiled, lambda: np.matmul(a, b, out=out), repeats=3)
            ratios[tile] = t_blas / t_tiled  # fraction of BLAS speed
        small_a, small_b = a[:128, :128], b[:128, :128]
        t_small, t_one = alternate(
            lambda: matmul_tiled(small_a, small_b, 8),
            lambda: np.matmul(small_a, small_b),
            repeats=5,
        )
    per_call = (t_small - t_one) / kernel_calls(128, 128, 128, 8)
    best = max(ratios, key=lambda t: ratios[t])
    figures = [
        Figure(f"tiled n={N}, T={t}: speed / np.matmul", r, "x", "np.matmul (1 thread) = 1.0")
        for t, r in ratios.items()
    ]
    figures += [
        Figure(f"best tile at n={N}", float(best), "T", f"{ratios[best]:.2f}x of np.matmul"),
        Figure("cost of one micro-kernel call (8x8 tiles)", per_call * 1e6, "us", "per call"),
    ]
    return figures


def _rate(trace: np.ndarray, config: CacheConfig) -> float:
    t0 = time.perf_counter()
    simulate(trace, config)
    return trace.size / (time.perf_counter() - t0)


@register
def cache_simulator_throughput() -> list[Figure]:
    l1 = CacheConfig(4096, 64, 8)
    rng = np.random.default_rng(0)
    random = rng.integers(0, 1 << 16, 1 << 20) * 8
    return [
        Figure(
            "LRU simulator, ijk trace n=64",
            _rate(loop_trace(64, "ijk"), l1) / 1e6,
            "M acc/s",
            "4 KiB 8-way",
        ),
        Figure(
            "LRU simulator, blocked trace n=64, T=8",
            _rate(blocked_trace(64, 8), l1) / 1e6,
            "M acc/s",
            "4 KiB 8-way",
        ),
        Figure(
            "LRU simulator, random addresses",
            _rate(random, l1) / 1e6,
            "M acc/s",
            "4 KiB 8-way, 512 KiB range",
        ),
    ]
