"""Plots of lab 36: IPC against issue width under the dependence bound, and branch predictor
accuracy against table size.

Lab: 36_cpu_pipelines
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

__all__ = ["plot_cpu"]

_COLORS = ("#3182bd", "#e6550d", "#31a354", "#756bb1")


def plot_cpu(
    widths: Sequence[int],
    ipc: Mapping[str, Sequence[float]],
    bound: Mapping[str, float],
    sizes: Sequence[int],
    accuracy: Mapping[str, Sequence[float]],
    title: str = "",
) -> Figure:
    """Left: IPC per width for each program, its ``N / CP`` bound in the legend (dashed when
    it fits the axes). Right: accuracy of
    each predictor per table size (``2**k`` entries, log scale)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    top = max(max(v) for v in ipc.values()) * 1.6
    for (name, vals), color in zip(ipc.items(), _COLORS, strict=False):
        cap = f", N / CP = {bound[name]:.1f}" if name in bound else ""
        left.plot(widths, vals, "o-", color=color, lw=1.8, label=f"{name}{cap}")
        if name in bound and bound[name] < top:
            left.axhline(bound[name], color=color, ls="--", lw=1)
    left.plot(widths, widths, color="0.6", ls=":", lw=1, label="IPC = width")
    left.set_xscale("log", base=2)
    left.set_xticks(list(widths), [str(w) for w in widths])
    left.set_ylim(0, top)
    left.set_xlabel("issue width W")
    left.set_ylabel("instructions per cycle")
    left.set_title("in-order issue against the dependence bound")
    left.grid(True, alpha=0.3)
    left.legend(loc="upper left", fontsize=9)
    for (name, vals), color in zip(accuracy.items(), _COLORS, strict=False):
        right.plot(sizes, vals, "o-", color=color, lw=1.8, label=name)
    right.set_xscale("log", base=2)
    right.set_xlabel("table entries")
    right.set_ylabel("prediction accuracy")
    right.set_ylim(0, 1.05)
    right.set_title("branch predictors on one trace")
    right.grid(True, alpha=0.3)
    right.legend(loc="lower right", fontsize=9)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
