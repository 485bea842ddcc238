"""Plots of lab 21: modelled all-reduce time against size (the tree/ring crossover), and
measured bus bandwidth of a ring against gloo's all-reduce.

Lab: 21_ring_allreduce
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

__all__ = ["plot_bus_bandwidth", "plot_crossover"]

_STYLES = [("o", "-"), ("s", "--"), ("^", "-."), ("v", ":")]


def plot_crossover(
    sizes: Sequence[float],
    times: Mapping[str, Sequence[float]],
    formula: Mapping[str, Sequence[float]],
    crossover: float,
) -> Figure:
    """Simulated time (markers) and the alpha-beta formula (lines) per algorithm, log-log,
    with the predicted crossover size as a vertical line."""
    fig, ax = plt.subplots(figsize=(8.0, 4.0))
    for i, ((name, ys), (marker, line)) in enumerate(zip(times.items(), _STYLES * 2, strict=False)):
        (h,) = ax.loglog(sizes, ys, marker, ms=6, label=f"{name}, simulated")
        if name in formula:
            label = "lines: alpha-beta model" if i == 0 else None
            ax.loglog(sizes, formula[name], line, color=h.get_color(), lw=1.5, label=label)
    ax.axvline(crossover, color="0.3", ls=":", lw=1.5)
    note = f"predicted\ncrossover\n{crossover / 1e3:.0f} kB"
    ax.text(crossover * 1.1, ax.get_ylim()[0] * 1.5, note, fontsize=9)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("modelled all-reduce time (s)")
    ax.set_title("latency-bound tree vs bandwidth-bound ring")
    ax.legend(fontsize=9)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig


def plot_bus_bandwidth(sizes: Sequence[float], busbw: Mapping[str, Sequence[float]]) -> Figure:
    """Bus bandwidth (GB/s) against message size (bytes), one line per implementation."""
    fig, ax = plt.subplots(figsize=(8.0, 3.8))
    for (name, ys), (marker, line) in zip(busbw.items(), _STYLES * 2, strict=False):
        ax.semilogx(sizes, [y / 1e9 for y in ys], marker=marker, ls=line, ms=6, lw=2, label=name)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title("all-reduce on real gloo processes: algbw x 2(p-1)/p")
    ax.legend(fontsize=9)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig
