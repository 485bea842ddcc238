"""Plots of lab 00: the GEMM throughput of this machine against arithmetic intensity.

Lab: 00_orientation
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

__all__ = ["plot_gemm_throughput"]


def plot_gemm_throughput(
    sizes: Sequence[int],
    intensity: Sequence[float],
    gflops: Sequence[float],
    peak: float | None = None,
) -> Figure:
    """Plot measured GFLOP/s of square GEMMs against their arithmetic intensity.

    The x axis is logarithmic (intensity doubles with n) with one plain tick per measured
    intensity; the y axis is linear from 0, so heights compare directly. A dashed line marks
    ``peak``, the best throughput measured on this machine (default: the best point).
    """
    x, y = np.asarray(intensity, dtype=np.float64), np.asarray(gflops, dtype=np.float64)
    peak = float(y.max()) if peak is None else float(peak)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    ax.axhline(peak, color="0.4", ls="--", lw=1)
    ax.text(x[0], peak, f"measured peak {peak:.0f} GFLOP/s", va="bottom", fontsize=9, color="0.3")
    ax.plot(x, y, "o-", color="tab:blue")
    top = 1.2 * max(peak, float(y.max()))
    for n, xi, yi in zip(sizes, x, y, strict=True):
        below = yi > 0.15 * top  # a label under a point near 0 would leave the frame
        ax.annotate(
            f"n={n}",
            (xi, yi),
            textcoords="offset points",
            xytext=(6, -6 if below else 6),
            ha="left",
            va="top" if below else "bottom",
            fontsize=9,
        )
    ax.set_xscale("log", base=2)
    ax.set_xticks(x, [f"{v:.3g}" for v in x])  # one plain label per measured size
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlim(x.min() / 1.4, x.max() * 1.7)  # room for the last label
    ax.set_ylim(0, top)
    ax.set_xlabel("arithmetic intensity n/6 (FLOP/byte, float32, log scale)")
    ax.set_ylabel("achieved throughput (GFLOP/s)")
    ax.set_title("numpy float32 GEMM on this machine, 1 thread")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig
