"""Plots of lab 26: bytes per rank of the context-parallel schemes, and a planner's ranking."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["plot_context_bytes", "plot_plan"]

_TERMS = ("compute", "elementwise", "bubble", "tp", "pp", "dp", "cp", "ep")


def plot_context_bytes(ps: Sequence[int], series: Mapping[str, Sequence[float]]) -> Figure:
    """Bytes each rank sends, in units of one rank's K (or Q) block, against the world size."""
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=100)
    styles = [("-", "o", 4.0), ("--", "s", 2.0), (":", "^", 2.0)]  # equal series stay visible
    for i, (name, ys) in enumerate(series.items()):
        ls, mk, lw = styles[i % len(styles)]
        ax.plot(ps, ys, linestyle=ls, marker=mk, linewidth=lw, markersize=4 + lw, label=name)
    ax.set_xlabel("ranks p (sequence split p ways)")
    ax.set_ylabel("bytes sent per rank / block bytes")
    ax.set_xticks(list(ps))
    ax.set_title("Context parallelism: what each rank sends per attention")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


def plot_plan(labels: Sequence[str], times: Sequence[Mapping[str, float]], title: str) -> Figure:
    """Stacked bars: step time of each layout by term (compute, bubble, communication...)."""
    fig, ax = plt.subplots(figsize=(7.2, 0.5 * len(labels) + 1.6), dpi=100)
    y = np.arange(len(labels))[::-1]
    left = np.zeros(len(labels))
    colors = plt.get_cmap("tab10")
    for i, term in enumerate(_TERMS):
        w = np.array([t.get(term, 0.0) for t in times])
        if not w.any():
            continue
        ax.barh(y, w, left=left, color=colors(i), label=term, height=0.6)
        left += w
    ax.set_yticks(y, labels, fontsize=9)
    ax.set_xlabel("estimated seconds per step")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.17), frameon=False)
    ax.set_xlim(0, left.max() * 1.02)
    fig.tight_layout()
    return fig
