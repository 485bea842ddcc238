"""Plots of lab 15: cache misses of hand-written schedules, and cost over an autotuning search.

Lab: 15_loop_optimization_autotuning
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["plot_schedule_misses", "plot_search"]


def plot_schedule_misses(labels: Sequence[str], misses: Sequence[float], budget: float) -> Figure:
    """Simulated misses per schedule (horizontal bars, log scale) against the budget line."""
    fig, ax = plt.subplots(figsize=(7.5, 0.5 * len(labels) + 1.6))
    y = np.arange(len(labels))
    colors = ["#3182bd" if m <= budget else "#de2d26" for m in misses]
    ax.barh(y, misses, color=colors)
    ax.axvline(budget, color="k", ls="--", lw=1.2, label=f"budget ({budget:,.0f} misses)")
    ax.set_xscale("log")
    ax.set_xlim(left=min(*misses, budget) / 2)
    ax.set_yticks(y, list(labels))
    ax.invert_yaxis()
    ax.set_xlabel("cache misses (lines moved), log scale")
    ax.set_title("the same matmul, scheduled differently (2 KiB cache)")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig


def plot_search(
    costs: Mapping[str, Sequence[float]], grid_best: float, budget: int, grid_size: int
) -> Figure:
    """Each measurement (dots) and the best so far (lines) per search, vs evaluations spent."""
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    colors = ["#3182bd", "#e6550d", "#31a354", "#756bb1"]
    for (label, values), color in zip(costs.items(), colors * 2, strict=False):
        x = np.arange(1, len(values) + 1)
        ax.plot(x, values, ".", color=color, alpha=0.35, ms=5)
        ax.plot(x, np.minimum.accumulate(values), "-", color=color, lw=2, label=label)
    ax.axhline(grid_best, color="k", lw=1, label="grid's best")
    ax.axhline(1.1 * grid_best, color="k", ls=":", lw=1, label="grid's best + 10%")
    ax.axvline(budget, color="gray", ls="--", lw=1, label=f"budget: {budget} of {grid_size}")
    ax.set_yscale("log")
    ax.set_xlabel("configurations measured")
    ax.set_ylabel("cost (cache misses), log scale")
    ax.set_title("autotuning: cost of each measurement and best so far")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper right", framealpha=0.95)
    fig.tight_layout()
    return fig
