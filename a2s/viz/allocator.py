"""Plots of lab 17: memory over a trace (reserved against the live-bytes lower bound) and
device allocations, caching allocator against the naive one.

Lab: 17_caching_allocator
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["plot_memory"]

MIB = float(1 << 20)


def plot_memory(runs: Mapping[str, Mapping[str, np.ndarray]], title: str = "") -> Figure:
    """Left: reserved MiB over the trace; right: cumulative device allocations (log scale).

    ``runs`` maps an allocator's name to :func:`minitorch.runtime.trace.replay`'s columns
    (``live``, ``reserved``, ``device_allocs`` per event). The live bytes, the lower bound of
    any allocator, are drawn once, in black, with a dotted line at their peak.
    """
    fig, (mem, dev) = plt.subplots(1, 2, figsize=(9, 4), gridspec_kw={"width_ratios": [3, 2]})
    first = next(iter(runs.values()))
    x = np.arange(len(first["live"]))
    for i, (name, cols) in enumerate(runs.items()):
        color = f"C{i}"
        mem.plot(
            x,
            cols["reserved"] / MIB,
            color=color,
            lw=2.4 - i,
            alpha=0.9 - 0.3 * i,
            label=f"{name}: reserved",
        )
        dev.plot(x, np.maximum(cols["device_allocs"], 1), color=color, lw=1.6, label=name)
    mem.plot(x, first["live"] / MIB, color="black", lw=0.8, label="live bytes (lower bound)")
    peak = float(first["live"].max()) / MIB
    mem.axhline(peak, color="black", lw=0.6, ls=":")
    mem.set_xlabel("event of the trace")
    mem.set_ylabel("MiB")
    mem.set_title(title or "memory over the trace")
    mem.grid(True, alpha=0.3)
    mem.legend(fontsize=9, loc="upper left")
    mem.set_ylim(0, max(float(c["reserved"].max()) for c in runs.values()) / MIB * 1.35)
    dev.set_yscale("log")
    dev.set_xlabel("event of the trace")
    dev.set_ylabel("device allocations so far")
    dev.set_title("cudaMalloc calls")
    dev.grid(True, which="major", alpha=0.3)
    dev.legend(fontsize=9, loc="upper left")
    fig.tight_layout()
    return fig
