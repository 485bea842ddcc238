"""Plots of lab 29: what a wait costs per message size, and eager launches against a graph.

Lab: 29_driver_and_command_submission
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["plot_timelines", "plot_waits"]

_COLORS = {"poll": "#e6550d", "hybrid": "#31a354", "interrupt": "#3182bd"}


def plot_waits(
    sizes: Sequence[int], costs: Mapping[str, Sequence[tuple[float, float]]], budget_ns: float
) -> Figure:
    """Latency (left) and CPU time (right) of each wait policy against the message size."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8), sharex=True)
    x = np.asarray(sizes, dtype=float)
    for policy, pairs in costs.items():
        lat, cpu = (np.asarray([p[i] for p in pairs]) / 1e3 for i in (0, 1))
        color = _COLORS.get(policy, "0.3")
        style = "--" if policy == "hybrid" else "-"
        axes[0].plot(x, lat, color=color, lw=1.8, ls=style, label=policy)
        axes[1].plot(x, cpu, color=color, lw=1.8, ls=style, label=policy)
    axes[1].axhline(budget_ns / 1e3, color="0.3", ls="--", lw=1, label="CPU budget")
    for ax, what in zip(axes, ("latency (us)", "CPU time (us)"), strict=True):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel(what)
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_title("submit to the thread knowing")
    axes[1].set_title("CPU the waiting thread burns")
    axes[1].legend(loc="upper left", fontsize=9)
    fig.tight_layout()
    return fig


def plot_timelines(runs: Mapping[str, Sequence[tuple[float, float]]], title: str) -> Figure:
    """The compute engine's busy spans (start, end in ns), one row per way of launching."""
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.8 * len(runs)))
    colors = ("#e6550d", "#3182bd", "#31a354")
    end = max((e for spans in runs.values() for _, e in spans), default=1.0)
    for row, (spans, color) in enumerate(zip(runs.values(), colors, strict=False)):
        bars = [(s / 1e3, (e - s) / 1e3) for s, e in spans]
        ax.broken_barh(bars, (row - 0.35, 0.7), facecolors=color, edgecolors="white", lw=0.3)
        last = max((e for _, e in spans), default=0.0)
        busy = sum(e - s for s, e in spans) / max(last, 1e-9)
        ax.text(last / 1e3, row, f"  {last / 1e3:.0f} us, {busy:.0%} busy", va="center", fontsize=9)
    ax.set_yticks(range(len(runs)), list(runs))
    ax.set_xlim(0, end / 1e3 * 1.35)
    ax.set_ylim(-0.6, len(runs) - 0.4)
    ax.invert_yaxis()
    ax.set_xlabel("time on the device's clock (us)")
    ax.set_title(title)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    return fig
