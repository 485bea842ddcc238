"""Plots of lab 00: the GEMM throughput of this machine against arithmetic intensity."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

__all__ = ["plot_gemm_throughput"]


def plot_gemm_throughput(
    sizes: Sequence[int], intensity: Sequence[float], gflops: Sequence[float]
) -> Figure:
    """Scatter measured GFLOP/s of square GEMMs against their arithmetic intensity (log-log)."""
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog(intensity, gflops, "o-", color="tab:blue")
    for n, x, y in zip(sizes, intensity, gflops, strict=True):
        ax.annotate(f"n={n}", (x, y), textcoords="offset points", xytext=(5, -12), fontsize=8)
    ax.set_xlabel("arithmetic intensity (FLOP/byte, float32)")
    ax.set_ylabel("achieved throughput (GFLOP/s)")
    ax.set_title("numpy GEMM on this machine, 1 thread")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig
