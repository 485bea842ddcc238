"""Plots of lab 10: dropped tokens against the capacity factor, bytes sent per expert, and the
expert-load imbalance while training with and without the load-balancing loss.

Lab: 10_moe
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["plot_capacity", "plot_load_balance"]


def plot_capacity(
    factors: Sequence[float],
    predicted: Sequence[int],
    measured: Sequence[int],
    sent_bytes: Sequence[int],
    padded_bytes_per_expert: int,
) -> Figure:
    """Left: dropped assignments per capacity factor, the model's line and the routed count.
    Right: bytes the all-to-all sends to each expert, against the capacity-padded buffer."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9.0, 3.6))
    ax1.plot(factors, predicted, "k--", lw=1, label="predicted: $\\sum_i \\max(0, w_i - C)$")
    ax1.plot(factors, measured, "o", ms=6, label="measured (router)")
    ax1.set_xlabel("capacity factor")
    ax1.set_ylabel("dropped assignments")
    ax1.set_title("token dropping")
    ax1.grid(True, alpha=0.3)
    ax1.legend(fontsize=8)
    kib = np.asarray(sent_bytes, dtype=np.float64) / 1024
    ax2.bar(np.arange(len(kib)), kib, color="tab:blue", label="sent (kept rows)")
    ax2.axhline(padded_bytes_per_expert / 1024, color="k", ls=":", lw=1, label="padded to capacity")
    ax2.set_xticks(np.arange(len(kib)), [str(i) for i in range(len(kib))])
    ax2.set_xlabel("expert")
    ax2.set_ylabel("bytes sent (KiB)")
    ax2.set_title("all-to-all: bytes per expert")
    ax2.set_ylim(0, 1.4 * max(padded_bytes_per_expert / 1024, float(kib.max(initial=0))))
    ax2.legend(fontsize=8, loc="upper center", ncol=2)
    fig.tight_layout()
    return fig


def plot_load_balance(
    cv: Mapping[str, Sequence[float]], counts: Mapping[str, Sequence[int]]
) -> Figure:
    """Left: coefficient of variation of the expert loads per step, one line per run.
    Right: tokens per expert at the last step, one group of bars per run."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9.0, 3.6))
    num_experts = len(next(iter(counts.values())))
    for name, values in cv.items():
        ax1.plot(np.arange(len(values)), values, lw=1.5, label=name)
    ax1.axhline(np.sqrt(num_experts - 1), color="k", ls=":", lw=1, label="one expert takes all")
    ax1.set_xlabel("training step")
    ax1.set_ylabel("CV of tokens per expert")
    ax1.set_title("expert-load imbalance")
    ax1.set_ylim(0, 1.45 * np.sqrt(num_experts - 1))
    ax1.grid(True, alpha=0.3)
    ax1.legend(fontsize=8, loc="upper right", ncol=2)
    width = 0.8 / len(counts)
    for j, (name, c) in enumerate(counts.items()):
        ax2.bar(np.arange(num_experts) + j * width, c, width, label=name)
    total = sum(next(iter(counts.values())))
    ax2.axhline(total / num_experts, color="k", ls=":", lw=1, label="balanced")
    ax2.set_xticks(np.arange(num_experts) + 0.4 - width / 2, [str(i) for i in range(num_experts)])
    ax2.set_xlabel("expert")
    ax2.set_ylabel("tokens (last batch)")
    ax2.set_title("load after training")
    ax2.set_ylim(0, 1.35 * max(max(c) for c in counts.values()))
    ax2.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig
