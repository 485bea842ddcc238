"""Plots of lab 32: a failure and its recovery (loss against step), how the checkpoint
interval sets the wall time, and what each save holds the training loop (sync vs async).

Lab: 32_fault_tolerance_elastic
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["plot_recovery", "plot_stalls"]

_COLORS = ("#3182bd", "#e6550d", "#31a354", "#756bb1")


def plot_recovery(
    full: Sequence[float],
    before: Sequence[float],
    after: Sequence[float],
    failed_at: int,
    resumed_from: int,
    taus_h: Sequence[float],
    wall_h: Sequence[float],
    marks_h: Mapping[str, float],
    title: str,
) -> Figure:
    """Left: the loss of the uninterrupted run, the run that failed at ``failed_at`` (its
    ``before`` losses, steps 1..failed_at) and its resumption from step ``resumed_from`` (the
    ``after`` losses); the steps between are lost work. Right: mean simulated wall time
    (hours) against the checkpoint interval (hours), with a dotted line per mark
    (Young, Daly, the learner's choice)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2))
    n = np.arange(1, len(full) + 1)
    left.plot(n, full, color="0.55", lw=4, alpha=0.6, label="uninterrupted")
    left.plot(np.arange(1, len(before) + 1), before, color=_COLORS[1], lw=1.6, label="failed run")
    steps = np.arange(resumed_from + 1, resumed_from + len(after) + 1)
    left.plot(steps, after, color=_COLORS[0], lw=1.6, ls="--", label="resumed from checkpoint")
    left.axvspan(resumed_from, failed_at, color=_COLORS[1], alpha=0.15, label="lost work")
    left.axvline(failed_at, color=_COLORS[1], lw=1.0)
    left.set_xlabel("step")
    left.set_ylabel("training loss")
    left.set_title("a failure and its recovery")
    left.legend(loc="upper right", fontsize=9)
    right.plot(taus_h, wall_h, color=_COLORS[2], lw=1.8, marker="o", ms=3, label="simulated")
    for (name, x), color in zip(marks_h.items(), ("0.2", _COLORS[3], _COLORS[0]), strict=False):
        right.axvline(x, color=color, ls=":", lw=1.6, label=f"{name}: {x:.2f} h")
    right.set_xlabel("checkpoint interval τ (h)")
    right.set_ylabel("mean wall time (h)")
    right.set_title("how often to checkpoint")
    right.legend(loc="upper center", fontsize=9)
    for ax in (left, right):
        ax.grid(True, alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_stalls(
    sync_s: Sequence[float], async_s: Sequence[float], mib: float, title: str
) -> Figure:
    """Milliseconds each save held the training loop: the synchronous save (encode, write,
    fsync) beside the asynchronous one (the copy only), one pair of bars per save."""
    fig, ax = plt.subplots(figsize=(7, 4))
    k = np.arange(1, len(sync_s) + 1)
    ax.bar(k - 0.2, np.asarray(sync_s) * 1e3, 0.4, color=_COLORS[1], label="synchronous save")
    ax.bar(k + 0.2, np.asarray(async_s) * 1e3, 0.4, color=_COLORS[0], label="async: the copy")
    ax.set_xticks(k)
    ax.set_xlabel(f"save number ({mib:.0f} MiB of state each)")
    ax.set_ylabel("loop held (ms)")
    ax.set_title("what a checkpoint costs the training loop")
    ax.legend(loc="upper right", fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    return fig
