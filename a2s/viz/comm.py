"""Plots of lab 20: bytes sent per rank against world size, modelled time against size.

Lab: 20_collectives
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

__all__ = ["plot_collective_costs"]


def plot_collective_costs(
    world_sizes: Sequence[int],
    busiest: Mapping[str, Sequence[float]],
    sizes: Sequence[int],
    times: Mapping[str, Sequence[float]],
    formula: Mapping[str, Sequence[float]] | None = None,
) -> Figure:
    """Two panels: the busiest rank's bytes over the buffer's bytes against world size.

    Left: one line per collective (overlapping curves get distinct markers and dashes).
    Right: modelled time (s) against message bytes, log-log, simulated markers and the
    alpha-beta formula as dashed lines (``formula``, same keys as ``times``).
    """
    fig, (ax, ax_t) = plt.subplots(1, 2, figsize=(8.7, 3.6))
    styles = [("o", "-", 7), ("s", "--", 4), ("^", "-", 7), ("v", ":", 4)]
    for (name, ys), (marker, line, ms) in zip(busiest.items(), styles * 3, strict=False):
        ax.plot(world_sizes, ys, marker=marker, ls=line, ms=ms, lw=2, label=name)
    ax.set_xlabel("world size p")
    ax.set_ylabel("busiest rank's bytes / buffer bytes")
    ax.set_title("who carries the load")
    ax.legend(fontsize=9)
    ax.grid(alpha=0.3)
    for name, ys in times.items():
        (line,) = ax_t.loglog(sizes, ys, "o", ms=5, label=f"{name} (simulated)")
        if formula is not None and name in formula:
            ax_t.loglog(sizes, formula[name], "--", color=line.get_color(), lw=1.5, label="formula")
    ax_t.set_xlabel("message size (bytes)")
    ax_t.set_ylabel("modelled time (s)")
    ax_t.set_title("alpha-beta: latency, then bandwidth")
    ax_t.legend(fontsize=9)
    ax_t.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig
