"""Plots of lab 25: pipeline timelines (one row per stage), bubble vs microbatches, memory.

Lab: 25_pipeline_parallel
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

__all__ = ["plot_bubble_and_memory", "plot_timelines"]

Times = Mapping[tuple[int, tuple[str, int, int]], tuple[float, float]]
_F = ["#9ecae1", "#4292c6"]  # forward, per chunk (light, dark)
_B = ["#fdae6b", "#e6550d"]  # backward, per chunk


def plot_timelines(timelines: Mapping[str, Times], label_min: float = 0.9) -> Figure:
    """One panel per schedule, one row per stage: F (blue) and B (orange) boxes in time.

    ``timelines`` maps a title to ``{(stage, (kind, mb, chunk)): (start, end)}`` (what
    ``pipeline_exec.simulate`` returns). A box wider than ``label_min`` time units shows its
    microbatch number; idle gaps are the bubble. Darker shades mark the second model chunk.
    """
    n = len(timelines)
    fig, axes = plt.subplots(n, 1, figsize=(8.6, 1.0 + 1.25 * n), squeeze=False)
    span = max(end for t in timelines.values() for _, end in t.values())
    for ax, (title, times) in zip(axes[:, 0], timelines.items(), strict=True):
        p = 1 + max(s for s, _ in times)
        busy = 0.0
        for (s, (kind, j, c)), (a, b) in times.items():
            color = (_F if kind == "F" else _B)[c % 2]
            ax.barh(s, b - a, left=a, height=0.8, color=color, edgecolor="white", lw=0.6)
            busy += b - a
            if b - a >= label_min:
                ax.text((a + b) / 2, s, str(j), ha="center", va="center", fontsize=8)
        end = max(b for _, b in times.values())
        ax.set_yticks(range(p), [f"stage {s}" for s in range(p)], fontsize=9)
        ax.set_ylim(p - 0.5, -0.5)
        ax.set_xlim(0, span * 1.01)
        ax.set_title(f"{title}: makespan {end:g}, bubble {1 - busy / (p * end):.1%}", fontsize=10)
        ax.tick_params(axis="x", labelsize=9)
    axes[-1, 0].set_xlabel("simulated time (forward = 1 per stage)")
    handles = [
        Patch(color=_F[0], label="forward"),
        Patch(color=_B[0], label="backward"),
        Patch(color=_F[1], label="F, chunk 1"),
        Patch(color=_B[1], label="B, chunk 1"),
    ]
    fig.legend(
        handles=handles,
        loc="lower center",
        ncol=4,
        fontsize=9,
        frameon=False,
        bbox_to_anchor=(0.5, -0.01),
    )
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig


def plot_bubble_and_memory(
    ms: Sequence[int],
    measured: Mapping[str, Sequence[float]],
    formula: Mapping[str, Sequence[float]],
    peaks: Mapping[str, Sequence[float]],
) -> Figure:
    """Bubble fraction vs microbatches m (left; markers measured, lines the formulas) and
    the peak of stashed activations per stage, in full-stage units (right, bars)."""
    fig, (ax, ax_mem) = plt.subplots(1, 2, figsize=(8.7, 3.6))
    markers = ["o", "s", "^", "D"]
    for k, ((name, ys), mk) in enumerate(zip(measured.items(), markers, strict=False)):
        ax.plot(ms, ys, mk, ms=9 - 2 * k, mfc="none", mew=1.5, label=f"{name} (simulated)")
    for name, ys in formula.items():
        ax.plot(ms, ys, "-", lw=1.2, alpha=0.7, label=name)
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(ms), [str(m) for m in ms])
    ax.set_xlabel("microbatches m")
    ax.set_ylabel("bubble (idle fraction)")
    ax.set_title("bubble: simulated vs formula")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    width = 0.8 / max(1, len(peaks))
    for k, (name, ys) in enumerate(peaks.items()):
        x = np.arange(len(ys)) + (k - (len(peaks) - 1) / 2) * width
        ax_mem.bar(x, ys, width, label=name)
    n = max(len(ys) for ys in peaks.values())
    ax_mem.set_xticks(range(n), [f"stage {s}" for s in range(n)])
    ax_mem.set_ylim(0, 1.35 * max(max(ys) for ys in peaks.values()))
    ax_mem.set_ylabel("peak stashed activations\n(microbatch x full stage)")
    ax_mem.set_title("memory per stage")
    ax_mem.legend(fontsize=8, ncol=3, loc="upper center")
    fig.tight_layout()
    return fig
