"""Plots of lab 09: how RoPE and ALiBi see distance, and the tiny GPT's training curve.

Lab: 09_transformer
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["plot_positions", "plot_training_loss"]


def plot_positions(
    distances: Sequence[int],
    alibi: np.ndarray,
    rope_scores: Mapping[str, Sequence[float]],
) -> Figure:
    """Left: ALiBi's bias -slope_h * distance per head, ``alibi`` (H, len(distances)).
    Right: RoPE score of a query and a key as a function of m - n (one curve per label)."""
    fig, (ax_a, ax_r) = plt.subplots(1, 2, figsize=(8.7, 3.5))
    dist = np.asarray(distances)
    for h, row in enumerate(alibi):
        ax_a.plot(dist, row, lw=1.8, label=f"head {h + 1}")
    ax_a.set_xlabel("distance i - j (tokens)")
    ax_a.set_ylabel("bias added to the score")
    ax_a.set_title("ALiBi: a linear penalty per head")
    ax_a.legend(fontsize=8, ncol=2)
    ax_a.grid(alpha=0.3)
    for label, curve in rope_scores.items():
        ax_r.plot(dist, curve, lw=1.8, label=label)
    ax_r.set_xlabel("distance m - n (tokens)")
    ax_r.set_ylabel("q · k after RoPE")
    ax_r.set_title("RoPE: the score depends on m - n")
    ax_r.legend(fontsize=8)
    ax_r.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def plot_training_loss(
    losses: Mapping[str, Sequence[float]], target: float | None = None
) -> Figure:
    """Answer loss per step (log scale) of one or more runs; ``target`` draws the stated bar."""
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for label, curve in losses.items():
        y = np.asarray(curve, dtype=np.float64)
        ax.semilogy(np.arange(1, len(y) + 1), y, lw=1, alpha=0.35)
        k = max(1, len(y) // 40)
        smooth = np.convolve(y, np.ones(k) / k, mode="valid")
        ax.semilogy(np.arange(k, len(y) + 1), smooth, lw=2, label=f"{label} (mean of {k})")
    if target is not None:
        ax.axhline(target, color="gray", ls=":", lw=1.5, label=f"target {target:g} nats")
    ax.set_xlabel("Adam step (32 examples)")
    ax.set_ylabel("answer loss (nats/token)")
    ax.set_title("tiny GPT on reverse + sort")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig
