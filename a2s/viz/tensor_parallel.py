"""Plots of lab 24: activation bytes per layer under TP, TP + SP and recomputation.

Lab: 24_tensor_sequence_parallel
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

__all__ = ["plot_activation_memory"]

_STYLE = {
    "tp": ("o", "C0", "TP"),
    "sp": ("s", "C2", "TP + SP"),
    "recompute": ("^", "C3", "full recompute"),
}


def plot_activation_memory(
    ts: Sequence[int],
    measured: Mapping[str, Sequence[float]],
    formula: Mapping[str, Sequence[float]],
    big_ts: Sequence[int],
    big: Mapping[str, Sequence[float]],
    big_name: str = "GPT-3 175B",
) -> Figure:
    """Left: bytes per rank kept by the simulated layer (markers) vs the formulas (lines), as
    multiples of sbh. Right: the formulas at a published scale, GiB per layer per GPU."""
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(9.0, 3.6))
    for mode, ys in measured.items():
        marker, color, name = _STYLE[mode]
        ax.plot(ts, formula[mode], "-", color=color, lw=1.5)
        ax.plot(ts, ys, marker, color=color, ms=8, label=f"{name} (measured)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(ts), [str(t) for t in ts])
    ax.set_xlabel("tensor-parallel ranks t")
    ax.set_ylabel("kept bytes / sbh")
    ax.set_title("Tiny layer on SimWorld (lines: formulas)")
    ax.legend(fontsize=9)
    ax.grid(alpha=0.3)
    for mode, ys in big.items():
        marker, color, name = _STYLE.get(mode, ("D", "C7", "no parallelism"))
        bx.plot(big_ts, ys, marker + "-", color=color, ms=6, lw=1.5, label=name)
    bx.set_xscale("log", base=2)
    bx.set_xticks(list(big_ts), [str(t) for t in big_ts])
    bx.set_xlabel("tensor-parallel ranks t")
    bx.set_ylabel("GiB per layer per GPU")
    bx.set_title(f"{big_name}, s = 2048, b = 1")
    bx.legend(fontsize=9)
    bx.grid(alpha=0.3)
    fig.tight_layout()
    return fig
