"""Plots of lab 27: the systolic wavefront, utilisation of mapped GEMMs, mesh link loads, and a
layer placed on chiplets.

Lab: 27_accelerator_architecture
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["plot_busy", "plot_die_placements", "plot_link_loads", "plot_utilisation"]


def plot_busy(runs: Mapping[str, np.ndarray], pes: int, title: str) -> Figure:
    """Busy PEs per cycle of each dataflow (one line each): fill, steady state, drain."""
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for (name, busy), color in zip(runs.items(), ("#3182bd", "#e6550d", "#31a354"), strict=False):
        share = busy.sum() / (pes * len(busy))
        label = f"{name}: {len(busy)} cycles, {share:.0%} busy"
        ax.plot(np.arange(len(busy)), busy, color=color, lw=1.8, label=label)
    ax.axhline(pes, color="0.4", ls="--", lw=1, label=f"all {pes} PEs")
    ax.set_ylim(0, 1.45 * pes)
    ax.set_xlabel("cycle")
    ax.set_ylabel("PEs doing a useful MAC")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize=9)
    fig.tight_layout()
    return fig


def plot_utilisation(
    names: Sequence[str], series: Mapping[str, Sequence[float]], title: str
) -> Figure:
    """Utilisation (fraction of PE-cycles doing useful MACs) per GEMM, one bar per series."""
    fig, ax = plt.subplots(figsize=(8, 4.2))
    y = np.arange(len(names))
    h = 0.8 / max(len(series), 1)
    colors = ("#3182bd", "#9ecae1", "#e6550d", "#fdae6b")
    for i, ((label, vals), color) in enumerate(zip(series.items(), colors, strict=False)):
        ax.barh(
            y + (i - (len(series) - 1) / 2) * h, np.maximum(vals, 1e-4), h, label=label, color=color
        )
    ax.axvline(1.0, color="0.4", ls="--", lw=1)
    ax.set_xscale("log")
    ax.set_xlim(1e-4, 300)
    ax.set_xticks([1e-4, 1e-3, 1e-2, 1e-1, 1.0], ["0.01%", "0.1%", "1%", "10%", "100%"])
    ax.set_yticks(y, list(names))
    ax.invert_yaxis()
    ax.set_xlabel("utilisation (useful MACs / PE-cycles), log scale")
    ax.set_title(title)
    ax.grid(True, axis="x", which="major", alpha=0.3)
    ax.legend(loc="center right", fontsize=9, title="dashed line: 100 %", title_fontsize=9)
    fig.tight_layout()
    return fig


def plot_link_loads(
    meshes: Mapping[str, np.ndarray], order: Mapping[str, Sequence[tuple[int, int]]]
) -> Figure:
    """One panel per placement: mesh links drawn with width and colour by load (chunks)."""
    fig, axes = plt.subplots(1, len(meshes), figsize=(4.2 * len(meshes), 4.2), squeeze=False)
    step = ((1, 0), (-1, 0), (0, 1), (0, -1))
    side = ((0, 0.08), (0, -0.08), (-0.08, 0), (0.08, 0))  # the two directions side by side
    for ax, (name, loads) in zip(axes[0], meshes.items(), strict=True):
        h, w, _ = loads.shape
        top = max(float(loads.max()), 1.0)
        for y in range(h):
            for x in range(w):
                for d, (dx, dy) in enumerate(step):
                    if not (0 <= x + dx < w and 0 <= y + dy < h):
                        continue
                    v, (ox, oy) = loads[y, x, d], side[d]
                    ax.plot(
                        [x + ox, x + dx + ox],
                        [y + oy, y + dy + oy],
                        color=plt.cm.Reds(0.25 + 0.75 * v / top) if v else "0.85",
                        lw=1 + 4 * v / top,
                        solid_capstyle="butt",
                    )
        for rank, (x, y) in enumerate(order[name]):
            ax.scatter([x], [y], s=260, color="white", edgecolors="0.2", zorder=3)
            ax.text(x, y, str(rank), ha="center", va="center", fontsize=9, zorder=4)
        ax.set_title(f"{name}: busiest link {loads.max():.0f} chunk(s)", fontsize=10)
        ax.set_xlim(-0.5, w - 0.5)
        ax.set_ylim(-0.5, h - 0.5)
        ax.set_aspect("equal")
        ax.set_xticks(range(w))
        ax.set_yticks(range(h))
        ax.set_xlabel("x")
        ax.set_ylabel("y")
    fig.tight_layout()
    return fig


def plot_die_placements(
    rows: Sequence[tuple[str, float | None, float, float]], title: str
) -> Figure:
    """One bar per configuration ``(label, joules or None, busiest link s, budget s)``: the
    energy of one step, annotated with the busiest die-to-die link against its budget."""
    fig, ax = plt.subplots(figsize=(8, 0.55 * len(rows) + 1.6))
    y = np.arange(len(rows))
    energies = [0.0 if e is None else e * 1e9 for _, e, _, _ in rows]
    top = max([*energies, 1e-9])
    colors = ["0.8" if e is None else "#3182bd" for _, e, _, _ in rows]
    ax.barh(y, energies, 0.6, color=colors)
    for i, (_, e, worst, budget) in enumerate(rows):
        note = f"{energies[i]:.0f} nJ, busiest link {worst * 1e6:.2f} of {budget * 1e6:.0f} us"
        if e is None:
            note = "no placement meets the budget"
        elif worst == 0:
            note = f"{energies[i]:.0f} nJ, no die-to-die traffic"
        ax.text(energies[i] + 0.02 * top, i, note, va="center", fontsize=9)
    ax.set_yticks(y, [label for label, *_ in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, 1.9 * top)
    ax.set_xlabel("energy of one step's activations (nJ)")
    ax.set_title(title)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    return fig
