"""Plots of lab 04: sample images, loss curves with the schedule and the loss scale, and the
activation memory of recomputation schedules against depth.

Lab: 04_training_loop
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["plot_loss_curves", "plot_samples", "plot_tape_bytes"]


def plot_samples(x: np.ndarray, y: np.ndarray, names: Sequence[str], per_class: int = 3) -> Figure:
    """A grid of ``per_class`` images (rows) for each class (columns); x: (n, H, W)."""
    classes = len(names)
    fig, axes = plt.subplots(
        per_class, classes, figsize=(0.86 * classes, 0.9 * per_class + 0.5), squeeze=False
    )
    for c in range(classes):
        idx = np.flatnonzero(y == c)[:per_class]
        for r in range(per_class):
            ax = axes[r][c]
            if r < len(idx):
                ax.imshow(x[idx[r]], cmap="gray_r", vmin=-0.5, vmax=1.2)
            ax.set_xticks([])
            ax.set_yticks([])
        axes[0][c].set_title(names[c], fontsize=9)
    fig.suptitle(f"generated shapes, {x.shape[1]}x{x.shape[2]} pixels, with noise")
    fig.tight_layout()
    return fig


def _smooth(v: Sequence[float], window: int) -> np.ndarray:
    a = np.asarray(v, dtype=np.float64)
    if window <= 1 or len(a) < window:
        return a
    kernel = np.ones(window) / window
    return np.convolve(a, kernel, mode="valid")


def plot_loss_curves(
    curves: Mapping[str, Sequence[float]],
    *,
    lr: Sequence[float] | None = None,
    lr_label: str = "learning rate",
    scale: Sequence[float] | None = None,
    smooth: int = 10,
    title: str = "training loss",
) -> Figure:
    """Loss per step for each run (moving average over ``smooth`` steps) on one axes.

    ``lr`` adds a learning-rate schedule (labelled ``lr_label``) on a second y-axis;
    ``scale`` adds a panel with a dynamic loss scale (log2) under the curves.
    """
    rows = 2 if scale is not None else 1
    fig, axes = plt.subplots(
        rows,
        1,
        figsize=(7, 4.2 if rows == 1 else 6),
        sharex=True,
        squeeze=False,
        gridspec_kw={"height_ratios": [3, 1][:rows]},
    )
    ax = axes[0][0]
    styles = [("-", 3.0), ("--", 2.0), (":", 2.0), ("-", 1.2), ("-.", 1.2)]
    for i, (label, v) in enumerate(curves.items()):
        s = _smooth(v, smooth)
        ls, lw = styles[i % len(styles)]  # overlapping curves stay visible
        ax.plot(np.arange(len(s)) + (len(v) - len(s)), s, label=label, ls=ls, lw=lw)
    ax.set_ylabel(f"cross-entropy (mean of {smooth} steps)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if lr is not None:
        twin = ax.twinx()
        twin.plot(np.asarray(lr), color="gray", ls=":", lw=1.2, label=lr_label)
        twin.set_ylabel("learning rate", color="gray")
        twin.legend(loc="center right", fontsize=8)
    ax.legend(loc="upper right", fontsize=8)
    if scale is not None:
        bottom = axes[1][0]
        bottom.step(np.arange(len(scale)), np.log2(np.asarray(scale)), where="post", color="C2")
        bottom.set_ylabel("log2 loss scale")
        bottom.grid(True, alpha=0.3)
    axes[-1][0].set_xlabel("optimizer step")
    fig.tight_layout()
    return fig


def plot_tape_bytes(
    ns: Sequence[int], peaks: Mapping[str, Sequence[float]], activation_bytes: int
) -> Figure:
    """Peak activation memory of backward vs depth N, log-log, in units of one activation.

    Dashed guides show slopes N and sqrt(N), the two growth laws of Chen et al. 2016.
    """
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    n = np.asarray(ns, dtype=np.float64)
    for (label, v), marker in zip(peaks.items(), "osd^v", strict=False):
        ax.loglog(n, np.asarray(v) / activation_bytes, marker=marker, label=label)
    ax.loglog(n, 2 * n, "k--", lw=0.8, alpha=0.5, label="2N")
    ax.loglog(n, 5 * np.sqrt(n), "k:", lw=0.8, alpha=0.7, label="5 sqrt(N)")
    ax.set_xlabel("layers N")
    ax.set_ylabel(f"peak activations in backward (x {activation_bytes} B)")
    ax.set_title("activation memory: keep all vs recompute")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
