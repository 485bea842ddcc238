"""Plots of lab 22: measured message times against the fitted alpha-beta line.

Lab: 22_rdma_and_transport
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["plot_alpha_beta"]


def plot_alpha_beta(
    sizes: Sequence[int],
    series: Mapping[str, tuple[Sequence[float], float, float]],
) -> Figure:
    """Plot one-way message time against size, log-log, with each series' fitted line.

    ``series`` maps a name to ``(times in seconds, alpha, beta)``; points are the measurements,
    the dashed line of the same colour is ``alpha + n * beta``. A label gives alpha in µs and
    the bandwidth 1/beta in GB/s.
    """
    n = np.asarray(sizes, dtype=np.float64)
    grid = np.geomspace(n.min(), n.max(), 200)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for i, (name, (times, alpha, beta)) in enumerate(series.items()):
        color = f"C{i}"
        t = np.asarray(times, dtype=np.float64)
        ax.plot(n, t * 1e6, "o", color=color, label=f"{name}: measured")
        fit = (alpha + grid * beta) * 1e6
        label = f"fit: α = {alpha * 1e6:.1f} µs, 1/β = {1 / beta / 1e9:.2f} GB/s"
        ax.plot(grid[fit > 0], fit[fit > 0], "--", color=color, label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes, log scale)")
    ax.set_ylabel("one-way time (µs, log scale)")
    ax.set_title("loopback message time and the alpha-beta model")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=9, loc="upper left")
    fig.tight_layout()
    return fig
