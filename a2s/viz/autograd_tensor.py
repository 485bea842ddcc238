"""Plots of lab 03: three engines training one CNN, and the memory price of im2col.

Lab: 03_autograd_tensor
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["plot_im2col_blowup", "plot_training_agreement"]


def plot_training_agreement(
    losses: Mapping[str, Sequence[float]], reference: str = "torch"
) -> Figure:
    """Loss curves of several engines (left) and |loss - reference| per step, log scale (right).

    ``losses`` maps an engine's name to its loss after each SGD step; ``reference`` names
    the ground-truth curve. Exact agreement (error 0) is drawn at 1e-17, below float64's eps.
    """
    fig, (ax, ax_err) = plt.subplots(1, 2, figsize=(8.7, 3.6))
    styles = ["-", "--", ":", "-."]
    for (name, curve), style in zip(losses.items(), styles * 2, strict=False):
        ax.plot(np.arange(1, len(curve) + 1), curve, style, lw=2, label=name)
    ax.set_xlabel("SGD step")
    ax.set_ylabel("cross-entropy loss (nats)")
    ax.set_title("one CNN, three backward passes")
    ax.legend()
    ref = np.asarray(losses[reference], dtype=np.float64)
    for name, curve in losses.items():
        if name == reference:
            continue
        err = np.abs(np.asarray(curve, dtype=np.float64) - ref)
        ax_err.semilogy(np.arange(1, len(err) + 1), np.maximum(err, 1e-17), "o-", ms=3, label=name)
    ax_err.axhline(np.finfo(np.float64).eps, color="gray", lw=1, ls=":", label="float64 eps")
    ax_err.set_xlabel("SGD step")
    ax_err.set_ylabel(f"|loss - {reference} loss|  (0 drawn at 1e-17)")
    ax_err.set_title(f"disagreement with {reference} (float64)")
    ax_err.legend(fontsize=8)
    ax_err.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig


def plot_im2col_blowup(
    kernel_sizes: Sequence[int], ratios: Mapping[str, Sequence[float]]
) -> Figure:
    """Bytes of the im2col column matrix over bytes of the input, against the kernel size.

    ``ratios`` maps a label (e.g. "stride 1") to one measured ratio per kernel size; the
    k^2 and k^2/4 lines are what 'same' padding predicts for stride 1 and 2.
    """
    fig, ax = plt.subplots(figsize=(6, 4))
    k = np.asarray(kernel_sizes, dtype=np.float64)
    for label, r in ratios.items():
        ax.plot(k, r, "o-", lw=2, label=f"measured, {label}")
    ax.plot(k, k**2, "k:", lw=1, label="$k^2$ (stride 1)")
    ax.plot(k, k**2 / 4, "k--", lw=1, label="$k^2/4$ (stride 2)")
    ax.set_yscale("log")
    ax.set_xticks(list(kernel_sizes))
    ax.set_xlabel("kernel size k (k x k, 'same' padding)")
    ax.set_ylabel("column matrix bytes / input bytes")
    ax.set_title("im2col copies every pixel into $k^2$ columns")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
