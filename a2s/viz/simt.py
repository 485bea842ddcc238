"""Plots of lab 07: what a warp access costs, and each kernel variant against its budget.

Lab: 07_gpu_programming_model
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

__all__ = ["plot_strided_sectors", "plot_variant_costs"]


def plot_strided_sectors(
    strides: Sequence[int], measured: Sequence[float], predicted: Sequence[float]
) -> Figure:
    """32-byte sectors one warp touches reading float32 at each stride: measured vs predicted."""
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    s = np.asarray(strides)
    ax.plot(s, measured, "o", ms=7, label="measured (simulator)")
    ax.plot(s, predicted, "k-", lw=1.5, label="your prediction")
    ax.axhline(4, color="tab:green", ls=":", lw=1.5, label="coalesced: 128 B = 4 sectors")
    ax.axhline(32, color="tab:red", ls="--", lw=1.5, label="one sector per lane: 32")
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(strides), [str(v) for v in strides])
    ax.set_ylim(0, 36)
    ax.set_xlabel("stride between lanes (float32 elements)")
    ax.set_ylabel("32-byte sectors per warp load")
    ax.set_title("one warp, 32 lanes: the cost of a strided load")
    ax.legend(fontsize=9, loc="center right")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


def plot_variant_costs(costs: Mapping[str, tuple[float, float]]) -> Figure:
    """Per kernel variant: global sectors and shared transactions over their budgets.

    ``costs`` maps a variant's name to (global sectors / closed-form minimum, shared
    transactions / closed-form budget); 0 means the variant does not use shared memory.
    1.0 is on budget in both panels: every bar past the line breaks a check.
    """
    names = list(costs)
    ratio = np.array([costs[n][0] for n in names])
    degree = np.array([costs[n][1] for n in names])
    y = np.arange(len(names))[::-1]
    fig, (ax_g, ax_s) = plt.subplots(1, 2, figsize=(9, 0.45 * len(names) + 1.6), sharey=True)
    for ax, val, title, xlabel in (
        (ax_g, ratio, "global memory traffic", "sectors / closed-form minimum"),
        (ax_s, degree, "shared memory (conflicts, divergence)", "transactions / budget"),
    ):
        over = val > 1.0 + 1e-9
        ax.barh(y, val, color=np.where(over, "tab:red", "tab:green"), height=0.6)
        ax.axvline(1.0, color="k", lw=1.2, ls="--")
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlim(0.7, max(2.0, float(val.max()) * 2.2))
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.grid(True, axis="x", alpha=0.3)
        for yi, v in zip(y, val, strict=True):
            label = "not used" if v == 0 else f"{v:.3g}x"
            ax.text(max(v, 0.72) * 1.08, yi, label, va="center", fontsize=9)
    ax_g.set_yticks(y, names)
    fig.suptitle("green: on budget (the check passes); red: over it (the check fails)", fontsize=10)
    fig.tight_layout()
    return fig
