"""Plots of lab 06: misses of the six loop orders, naive vs tiled traffic, the tile search.

Lab: 06_matmul_tiling
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["plot_loop_orders", "plot_tile_search", "plot_traffic"]


def plot_loop_orders(
    orders: Sequence[str], predicted: Sequence[float], measured: Sequence[float], n: int
) -> Figure:
    """Predicted and simulated misses per loop order (bars, log scale)."""
    fig, ax = plt.subplots(figsize=(7, 3.8))
    x = np.arange(len(orders))
    ax.bar(x - 0.2, predicted, 0.4, label="predicted (formula)", color="#9ecae1")
    ax.bar(x + 0.2, measured, 0.4, label="simulated (LRU)", color="#3182bd")
    ax.set_yscale("log")
    ax.set_xticks(x, [f"{o}\n(inner {o[-1]})" for o in orders])
    ax.set_ylabel("cache misses (lines moved)")
    ax.set_title(f"loop order decides the traffic: n={n}, 512 B cache")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(loc="upper left")
    fig.tight_layout()
    return fig


def plot_traffic(
    ns: Sequence[int],
    measured: Mapping[str, Sequence[float]],
    formulas: Mapping[str, Sequence[float]],
    cache_label: str,
) -> Figure:
    """Simulated misses against n (points) with the analytic traffic (dashed lines), log-log."""
    fig, ax = plt.subplots(figsize=(7, 4))
    n = np.asarray(ns, dtype=np.float64)
    markers = ["o", "s", "^", "D"]
    for (label, values), marker in zip(measured.items(), markers * 2, strict=False):
        ax.plot(n, values, marker, ms=7, label=f"simulated: {label}")
    for label, values in formulas.items():
        ax.plot(n, values, "--", lw=1.5, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(list(ns), [str(v) for v in ns])
    ax.minorticks_off()
    ax.set_xlabel("matrix size n")
    ax.set_ylabel("cache misses (lines moved)")
    ax.set_title(f"naive vs tiled traffic, {cache_label}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_tile_search(
    tiles: Sequence[int], gflops: Sequence[float], blas_gflops: float, best: int, n: int
) -> Figure:
    """GFLOP/s of the tiled numpy matmul per tile size, against one np.matmul call."""
    fig, ax = plt.subplots(figsize=(7, 3.8))
    ax.plot(tiles, gflops, "o-", lw=2, label="tiled, numpy micro-kernels")
    ax.axhline(blas_gflops, color="k", ls="--", lw=1.5, label="one np.matmul call (BLAS)")
    i = list(tiles).index(best)
    ax.plot([best], [gflops[i]], "r*", ms=16, label=f"best tile: {best}")
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(tiles), [str(t) for t in tiles])
    ax.minorticks_off()
    ax.set_ylim(0, max(max(gflops), blas_gflops) * 1.15)
    ax.set_xlabel("tile size T (T x T tiles)")
    ax.set_ylabel("GFLOP/s (one thread)")
    ax.set_title(f"tile-size search, n={n}")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig
