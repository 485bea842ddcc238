"""Plots of lab 23: exposed communication against bucket size, ZeRO memory per rank.

Lab: 23_data_parallel_zero
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

__all__ = ["plot_bucket_overlap", "plot_zero_memory"]


def plot_bucket_overlap(
    sizes: Sequence[int],
    exposed: Sequence[float],
    no_overlap: float,
    prediction: float | None = None,
) -> Figure:
    """Exposed all-reduce time (ms) against bucket size (bytes, log x).

    A dashed line marks one bucket (no overlap); a star the learner's prediction for it.
    """
    fig, ax = plt.subplots(figsize=(8.0, 3.6))
    ax.semilogx(sizes, [e * 1e3 for e in exposed], "o-", lw=2, ms=6, label="exposed (timeline)")
    ax.axhline(no_overlap * 1e3, ls="--", color="gray", lw=1.5, label="one bucket: no overlap")
    if prediction is not None:
        ax.plot([max(sizes)], [prediction * 1e3], "*", ms=14, color="C3", label="your prediction")
    best = min(range(len(sizes)), key=lambda i: exposed[i])
    ax.plot(
        [sizes[best]],
        [exposed[best] * 1e3],
        "o",
        ms=12,
        mfc="none",
        mec="C2",
        mew=2,
        label=f"best: {sizes[best] / 2**20:.2g} MiB",
    )
    ax.set_xlabel("bucket size (bytes)")
    ax.set_ylabel("exposed communication (ms)")
    ax.set_title("DDP: bucket size vs communication left after backward")
    ax.legend(fontsize=9)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig


def plot_zero_memory(
    world_sizes: Sequence[int],
    measured: Mapping[str, Sequence[float]],
    formula: Mapping[str, Sequence[float]],
) -> Figure:
    """Per-rank model-state bytes (relative to 16Ψ) against N, measured markers and formulas."""
    fig, ax = plt.subplots(figsize=(8.0, 3.6))
    markers = ["o", "s", "^", "D"]
    for (name, ys), marker in zip(measured.items(), markers * 2, strict=False):
        (line,) = ax.plot(world_sizes, ys, marker, ms=8, label=f"{name} measured")
        ax.plot(world_sizes, formula[name], "--", color=line.get_color(), lw=1.5)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("data-parallel ranks N")
    ax.set_ylabel("bytes per rank / 16Ψ")
    ax.set_title("ZeRO memory per rank (dashed: paper's formulas)")
    ax.legend(fontsize=9, ncol=2)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig
