"""Plots of lab 14: an arena plan over time, one rectangle per buffer.

Lab: 14_graph_passes_memory_planning
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from minitorch.compiler.memory import Buffer, lower_bound, peak_bytes

__all__ = ["plot_arena"]


def plot_arena(
    plans: Sequence[tuple[str, Sequence[Buffer], dict[str, int]]], unit: int = 1024
) -> Figure:
    """One panel per ``(title, buffers, offsets)``: x is the step, y the offset in the arena.

    A buffer is a rectangle from the step that writes it to the last step that reads it; the
    dashed line is the plan's peak, the dotted one the lower bound (most bytes live at once).
    """
    fig, axes = plt.subplots(1, len(plans), figsize=(4.3 * len(plans), 3.8), squeeze=False)
    cmap = plt.get_cmap("tab20")
    for ax, (title, bufs, offsets) in zip(axes[0], plans, strict=True):
        for k, b in enumerate(bufs):
            ax.add_patch(
                Rectangle(
                    (b.first - 0.45, offsets[b.name] / unit),
                    b.last - b.first + 0.9,
                    b.size / unit,
                    facecolor=cmap(k % 20),
                    edgecolor="black",
                    linewidth=0.5,
                )
            )
        peak, low = peak_bytes(bufs, offsets) / unit, lower_bound(bufs) / unit
        steps = max((b.last for b in bufs), default=1) + 1
        ax.axhline(peak, color="black", linestyle="--", linewidth=1, label=f"peak {peak:,.0f} KiB")
        ax.axhline(
            low, color="tab:red", linestyle=":", linewidth=1.5, label=f"bound {low:,.0f} KiB"
        )
        ax.set_xlim(-1, steps)
        ax.set_ylim(0, peak * 1.25 if peak else 1)
        ax.set_xlabel("step (node)", fontsize=10)
        ax.set_title(title, fontsize=10)
        ax.tick_params(labelsize=9)
        ax.legend(fontsize=8.5, loc="upper left")
    axes[0][0].set_ylabel("arena offset (KiB)", fontsize=10)
    fig.tight_layout()
    return fig
