"""Plots of lab 05: rooflines with ops placed on them, and Amdahl vs Gustafson speedups.

Lab: 05_roofline
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from minitorch.hardware.roofline import Roofline
from minitorch.hardware.scaling import amdahl_speedup, gustafson_speedup

__all__ = ["plot_roofline", "plot_scaling"]

_COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")


def plot_roofline(
    roofs: Sequence[Roofline],
    points: Sequence[tuple[str, float, float]] = (),
    *,
    title: str = "roofline",
    unit: float = 1e9,
    unit_name: str = "GFLOP/s",
    lo: float = 1 / 8,
    hi: float = 1024.0,
) -> Figure:
    """Draw each roof (log-log) with its ridge point, and ``points`` = (label, intensity, FLOP/s).

    Points are numbered on the plot and named in the legend, so labels never collide.
    """
    fig, ax = plt.subplots(figsize=(8, 4.6))
    top = max(r.peak for r in roofs) / unit
    floor = min(r.attainable(lo) for r in roofs) / unit
    for r, color in zip(roofs, _COLORS, strict=False):
        xy = r.curve(lo, hi)
        ax.plot(
            xy[:, 0],
            xy[:, 1] / unit,
            color=color,
            lw=2,
            label=f"{r.name}: ridge {r.ridge:.3g} FLOP/B",
        )
        ax.axvline(r.ridge, color=color, ls=":", lw=1)
    for k, (label, x, y) in enumerate(points, 1):
        y_plot = y / unit
        floor = min(floor, y_plot)
        ax.plot([x], [y_plot], "o", color="black", ms=5)
        ax.annotate(str(k), (x, y_plot), textcoords="offset points", xytext=(4, 4), fontsize=9)
        ax.plot([], [], " ", label=f"{k}: {label}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(floor / 3, top * 3)
    ax.set_xlabel("arithmetic intensity (FLOP/byte, log)")
    ax.set_ylabel(f"attainable {unit_name} (log)")
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    return fig


def plot_scaling(
    serial_fraction: float,
    measured: Sequence[tuple[int, float]] = (),
    max_workers: int = 64,
) -> Figure:
    """Amdahl's and Gustafson's speedups for ``serial_fraction`` up to ``max_workers`` (log-log).

    ``measured`` = (workers, speedup) pairs measured here, drawn as dots.
    """
    p = np.arange(1, max_workers + 1)
    f = serial_fraction
    fig, ax = plt.subplots(figsize=(6.5, 4))
    ax.plot(p, p, color="0.6", ls="--", lw=1, label="ideal (p)")
    ax.plot(
        p,
        [gustafson_speedup(f, float(q)) for q in p],
        color="tab:green",
        lw=2,
        label=f"Gustafson, f = {f:.3f}",
    )
    ax.plot(
        p,
        [amdahl_speedup(f, float(q)) for q in p],
        color="tab:blue",
        lw=2,
        label=f"Amdahl, f = {f:.3f}",
    )
    if f > 0:
        ax.axhline(1 / f, color="tab:blue", ls=":", lw=1, label=f"Amdahl's cap 1/f = {1 / f:.1f}")
    if measured:
        w, s = zip(*measured, strict=True)
        ax.plot(w, s, "o", color="black", ms=6, label="measured here")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ticks = [2**k for k in range(int(np.log2(max_workers)) + 1)]
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.set_yticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("workers p (log)")
    ax.set_ylabel("speedup (log)")
    ax.set_xlim(1, max_workers)
    ax.set_ylim(0.8, max_workers * 1.3)
    ax.set_title("fixed-size (Amdahl) vs scaled (Gustafson) speedup")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=9, loc="upper left")
    fig.tight_layout()
    return fig
